"""Kernels of the differential fuzz test (``tests/test_fuzz.py``): one per region kind, each a
tile of ``BLOCK`` values loaded as fp32, cast to ``DT``, put through ``OP`` by a region (or a
same-language helper) and stored as fp32; ``OP == "sum"`` returns a 0-d value across the boundary.
The ``tile2d`` family loads a ``BM`` x ``BN`` tile per program of a 3-D grid through strides
(a transposed, a strided or a flipped view: a negative stride from an offset base), and
``OP == "rowsum"`` returns its 1-D row sums across the boundary.

Run as ``python -m tests.fuzz_kernels`` it reads one JSON case per line on stdin and answers
each with a JSON line: what ``hybrid.compile`` and the interpreter did, and whether the
interpreter's output is torch's.
"""
import json
import sys

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid


@triton.jit
def t_op(v, s, OP: tl.constexpr):
    if OP == "sum" or OP == "rowsum":   # a 1-D tile's sum, a 2-D tile's row sums
        r = tl.sum(v, axis=0 if OP == "sum" else 1)
    else:
        r = v * 2 + 1 if OP == "affine" else v * s
    return r


@gluon.jit
def g_op(v, s, OP: gl.constexpr, L: gl.constexpr):
    v = gl.convert_layout(v, L)
    if OP == "sum" or OP == "rowsum":
        r = gl.sum(v, axis=0 if OP == "sum" else 1)
    else:
        r = v * 2 + 1 if OP == "affine" else v * s
    return r


@triton.jit
def t_nested(v, s, OP: tl.constexpr, L: tl.constexpr):
    return g_op(v, s, OP, L)   # Gluon -> Triton -> Gluon: refused


@hybrid.jit
@gluon.jit
def gluon_kernel(x_ptr, y_ptr, s, BLOCK: gl.constexpr, DT: gl.constexpr, OP: gl.constexpr, L: gl.constexpr,
                 CALLS: gl.constexpr):
    """A Gluon kernel calling a Triton region, a Gluon helper, or a Triton region that calls Gluon."""
    offs = gl.arange(0, BLOCK, layout=L)
    v = gl.load(x_ptr + offs).to(DT)
    if CALLS == "triton":
        r = t_op(v, s, OP)
    elif CALLS == "gluon":
        r = g_op(v, s, OP, L)
    else:
        r = t_nested(v, s, OP, L)
    if OP == "sum":
        gl.store(y_ptr, r.to(gl.float32))
    else:
        gl.store(y_ptr + offs, gl.convert_layout(r, L).to(gl.float32))


@hybrid.jit
@triton.jit
def triton_kernel(x_ptr, y_ptr, s, BLOCK: tl.constexpr, DT: tl.constexpr, OP: tl.constexpr, L: tl.constexpr,
                  CALLS: tl.constexpr):
    """A Triton kernel calling a Gluon region or a Triton helper."""
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs).to(DT)
    if CALLS == "gluon":
        r = g_op(v, s, OP, L)
    else:
        r = t_op(v, s, OP)
    if OP == "sum":
        tl.store(y_ptr, r.to(tl.float32))
    else:
        tl.store(y_ptr + offs, r.to(tl.float32))


@hybrid.jit
@gluon.jit
def gluon_kernel_2d(x_ptr, y_ptr, s, x_off, stride_b, stride_m, stride_n, BM: gl.constexpr, BN: gl.constexpr,
                    DT: gl.constexpr, OP: gl.constexpr, L: gl.constexpr, CALLS: gl.constexpr):
    """A Gluon kernel calling a Triton region or a Gluon helper on a 2-D tile; y is contiguous."""
    m, n = gl.num_programs(0) * BM, gl.num_programs(1) * BN
    b = gl.program_id(2)
    rm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    rn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    v = gl.load(x_ptr + x_off + b * stride_b + gl.expand_dims(rm * stride_m, 1) + gl.expand_dims(rn * stride_n, 0))
    v = v.to(DT)
    if CALLS == "triton":
        r = t_op(v, s, OP)
    else:
        r = g_op(v, s, OP, L)
    if OP == "rowsum":
        gl.store(y_ptr + (b * m + rm) * gl.num_programs(1) + gl.program_id(1),
                 gl.convert_layout(r, gl.SliceLayout(1, L)).to(gl.float32))
    else:
        gl.store(y_ptr + b * m * n + gl.expand_dims(rm * n, 1) + gl.expand_dims(rn, 0),
                 gl.convert_layout(r, L).to(gl.float32))


@hybrid.jit
@triton.jit
def triton_kernel_2d(x_ptr, y_ptr, s, x_off, stride_b, stride_m, stride_n, BM: tl.constexpr, BN: tl.constexpr,
                     DT: tl.constexpr, OP: tl.constexpr, L: tl.constexpr, CALLS: tl.constexpr):
    """A Triton kernel calling a Gluon region or a Triton helper on a 2-D tile; y is contiguous."""
    m, n = tl.num_programs(0) * BM, tl.num_programs(1) * BN
    b = tl.program_id(2)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    v = tl.load(x_ptr + x_off + b * stride_b + rm[:, None] * stride_m + rn[None, :] * stride_n).to(DT)
    if CALLS == "gluon":
        r = g_op(v, s, OP, L)
    else:
        r = t_op(v, s, OP)
    if OP == "rowsum":
        tl.store(y_ptr + (b * m + rm) * tl.num_programs(1) + tl.program_id(1), r.to(tl.float32))
    else:
        tl.store(y_ptr + b * m * n + rm[:, None] * n + rn[None, :], r.to(tl.float32))


#: region kind -> the kernel and what it calls
KERNELS = {"gluon_host": (gluon_kernel, "triton"), "triton_host": (triton_kernel, "gluon"),
           "gluon": (gluon_kernel, "gluon"), "triton": (triton_kernel, "triton"), "nested": (gluon_kernel, "nested")}
KERNELS_2D = {"gluon_host": (gluon_kernel_2d, "triton"), "triton_host": (triton_kernel_2d, "gluon"),
              "gluon": (gluon_kernel_2d, "gluon"), "triton": (triton_kernel_2d, "triton")}
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8e4nv": "float8e4nv", "fp8e5": "float8e5"}
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8e4nv": "float8_e4m3fn",
                "fp8e5": "float8_e5m2"}
PROJECT_ERRORS = ("RequestError", "TargetError", "LayoutError", "RegionError", "SharedMemoryError")


def error_kind(exc: BaseException) -> str:
    """The class that says what went wrong: the outermost of the project's own errors in the
    chain, else the innermost cause (an interpreter ``InterpretError`` or Triton
    ``CompilationError`` wrapping the same ``ValueError`` are the same refusal)."""
    from interop import errors
    project = tuple(getattr(errors, name) for name in PROJECT_ERRORS)
    seen, inner = set(), exc
    while True:
        if isinstance(inner, project):
            return next(name for name in PROJECT_ERRORS if isinstance(inner, getattr(errors, name)))
        seen.add(id(inner))
        following = inner.__cause__ or inner.__context__
        if following is None or id(following) in seen:
            return type(inner).__name__
        inner = following


def _warp_size(case: dict) -> int:
    return 64 if case["target"].startswith("gfx") else 32


def _layout(case: dict):
    return gl.BlockedLayout([case["spt"]], [_warp_size(case)], [case["num_warps"]], [0])


def _layout_2d(case: dict):
    """``wpc_m`` warps down the rows, the rest across; one that does not divide ``num_warps``
    makes a layout whose warps are not the kernel's (refused)."""
    warp, rows = _warp_size(case), case["wpc_m"]
    return gl.BlockedLayout([1, case["spt"]], [case["tpw_m"], warp // case["tpw_m"]],
                            [rows, max(1, case["num_warps"] // rows)], case["order"])


#: Values no fuzz input is drawn from but a case's inputs may hold: NaN, infinities, zero's sign,
#: and denormals of fp32 (1e-40), fp16 (3e-6, 6e-8), bf16 (1e-39), fp8e5 (2e-5) and fp8e4nv
#: (0.003, 0.001), or values that flush to zero in one of them.
SPECIAL = (float("nan"), float("inf"), -float("inf"), -0.0, 1e-40, -1e-42, 1e-39, 3e-6, -6e-8, 2e-5, 0.003, -0.001)
#: What y holds before a launch: no case computes it, so an element the kernel left unwritten
#: differs from torch's.
UNWRITTEN = -7777.0


def _inputs(case: dict, numel: int):
    import torch
    generator = torch.Generator().manual_seed(case["seed"])
    x = torch.randn(numel, generator=generator) * 4
    if case["values"] == "special":   # about a quarter of the elements, at drawn places
        places = torch.randint(0, numel, (max(1, numel // 4), ), generator=generator)
        x[places] = torch.tensor(SPECIAL)[torch.randint(0, len(SPECIAL), places.shape, generator=generator)]
    return x


def _view(view: str, x):
    """``x`` ([batch, m, n]) as a kernel taking strides reads it: the tensor holding it, the
    offset of ``x[0, 0, 0]`` in it and the strides. A flipped view (torch's ``x.flip(1)``, a
    ``[::-1]`` on rows) starts at the last row with a negative row stride."""
    import torch
    batch, m, n = x.shape
    if view == "contiguous":
        return x.contiguous(), 0, (m * n, n, 1)
    if view == "transposed":   # column-major rows
        return x.transpose(1, 2).contiguous(), 0, (m * n, 1, m)
    if view == "strided":   # every 2nd row and 3rd column of a larger tensor
        base = torch.zeros(batch, 2 * m, 3 * n)
        base[:, ::2, ::3] = x
        return base, 0, (6 * m * n, 6 * n, 3)
    if view == "flipped_rows":
        return x.flip(1).contiguous(), (m - 1) * n, (m * n, -n, 1)
    return x.flip(1, 2).contiguous(), (m - 1) * n + n - 1, (m * n, -n, -1)   # flipped rows and columns


def _cast(case: dict, x):
    """fp32 values as the kernel's ``.to(DT)`` makes them, and back to fp32 (fp8 saturating)."""
    import torch
    dtype = getattr(torch, TORCH_DTYPES[case["dtype"]])
    if dtype.itemsize == 1:
        x = x.clamp(-torch.finfo(dtype).max, torch.finfo(dtype).max)
    return x.to(dtype).float()


def reference(case: dict, x):
    """What the GPU computes, by torch: the cast rounds to nearest even (fp8 saturating), bf16 and
    fp16 arithmetic rounds each op; ``scale`` multiplies by an fp32 scalar in fp32; a sum adds the
    last dimension of ``x`` (a 1-D tile's whole, a 2-D tile's rows)."""
    import torch
    dtype = getattr(torch, TORCH_DTYPES[case["dtype"]])
    v = x.to(dtype) if dtype.itemsize > 1 else _cast(case, x)
    if case["op"] == "affine":   # torch has no fp8 arithmetic: each op in fp32, rounded, as the GPU's
        return (v * 2 + 1).float() if dtype.itemsize > 1 else _cast(case, _cast(case, v * 2) + 1)
    if case["op"] == "scale":
        return v.float() * case["scale"]
    return v.float().sum(-1)


def mismatch(case: dict, x, got, expected) -> bool:
    """Whether ``got`` is not what torch computed: elementwise ops exactly (NaN where torch has
    NaN); a sum within the rounding of each add of its row (the order of the adds differs from
    torch's), and the same infinity or NaN where torch's is not finite."""
    import torch
    same = (got == expected) | (got.isnan() & expected.isnan())
    if case["op"] not in ("sum", "rowsum"):
        return not bool(same.all())
    eps = torch.finfo(getattr(torch, TORCH_DTYPES[case["dtype"]])).eps
    cast = _cast(case, x).nan_to_num(0.0, 0.0, 0.0)   # a row's bound from its finite values
    bound = cast.abs().sum(-1) * x.shape[-1] * eps + 1e-6
    close = (got - expected).abs() <= bound
    return not bool(torch.where(expected.isfinite(), close, same).all())


def _outcome(run) -> dict:
    try:
        return {"ok": True, "value": run()}
    except Exception as exc:   # the property compares what each side raised
        return {"ok": False, "error": type(exc).__name__, "kind": error_kind(exc), "message": str(exc)[:300]}


def _static(binary) -> dict:
    """What the compiled binary says without running: its kernel entries and warps."""
    return {"kernel_entries": binary.kernel_entries, "num_warps": binary.metadata.get("num_warps")}


def run_case(case: dict) -> dict:
    """``case`` compiled for its target and interpreted; the interpreter's distance from torch."""
    return (run_tile2d if case["family"] == "tile2d" else run_tile)(case)


def run_tile(case: dict) -> dict:
    import torch
    from hybrid import interpret
    (kernel, calls), layout = KERNELS[case["kind"]], _layout(case)
    constexprs = {"BLOCK": case["block"], "DT": getattr(tl, DTYPES[case["dtype"]]), "OP": case["op"], "L": layout,
                  "CALLS": calls}
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "fp32"}
    compiled = _outcome(lambda: _static(hybrid.compile(kernel, signature, constexprs, target=case["target"],
                                                       num_warps=case["num_warps"])))
    x = _inputs(case, max(case["block"], 1))
    y = torch.full_like(x, UNWRITTEN)

    def interpreted():
        interpret.launch(kernel, (1, ), x, y, case["scale"], **constexprs, num_warps=case["num_warps"],
                         target=case["target"])
        expected = reference(case, x)
        return {"mismatch": mismatch(case, x, y[:max(expected.numel(), 1)].reshape(expected.shape), expected)}
    return {"compile": compiled, "interpret": _outcome(interpreted)}


def run_tile2d(case: dict) -> dict:
    """A ``BM`` x ``BN`` tile per program of a (rows, columns, batch) grid, read through a view."""
    import torch
    from hybrid import interpret
    kernel, calls = KERNELS_2D[case["kind"]]
    constexprs = {"BM": case["bm"], "BN": case["bn"], "DT": getattr(tl, DTYPES[case["dtype"]]), "OP": case["op"],
                  "L": _layout_2d(case), "CALLS": calls}
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "fp32", "x_off": "i32", "stride_b": "i32",
                 "stride_m": "i32", "stride_n": "i32"}
    compiled = _outcome(lambda: _static(hybrid.compile(kernel, signature, constexprs, target=case["target"],
                                                       num_warps=case["num_warps"])))
    rows, columns, batch = case["grid"]
    m, n = rows * case["bm"], columns * case["bn"]
    x = _inputs(case, batch * m * n).reshape(batch, m, n)
    base, offset, strides = _view(case["view"], x)
    tiles = x.reshape(batch, m, columns, case["bn"])   # a row sum is per tile
    y = torch.full((batch * m * (columns if case["op"] == "rowsum" else n), ), UNWRITTEN)

    def interpreted():
        interpret.launch(kernel, tuple(case["grid"]), base, y, case["scale"], offset, *strides, **constexprs,
                         num_warps=case["num_warps"], target=case["target"])
        expected = reference(case, tiles)
        return {"mismatch": mismatch(case, tiles, y.reshape(expected.shape), expected)}
    return {"compile": compiled, "interpret": _outcome(interpreted)}


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(run_case(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
