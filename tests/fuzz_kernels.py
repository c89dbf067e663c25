"""Kernels of the differential fuzz test (``tests/test_fuzz.py``): one per region kind, each a
tile of ``BLOCK`` values loaded as fp32, cast to ``DT``, put through ``OP`` by a region (or a
same-language helper) and stored as fp32; ``OP == "sum"`` returns a 0-d value across the boundary.

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
    return tl.sum(v, axis=0) if OP == "sum" else (v * 2 + 1 if OP == "affine" else v * s)


@gluon.jit
def g_op(v, s, OP: gl.constexpr, L: gl.constexpr):
    v = gl.convert_layout(v, L)
    return gl.sum(v, axis=0) if OP == "sum" else (v * 2 + 1 if OP == "affine" else v * s)


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


#: region kind -> the kernel and what it calls
KERNELS = {"gluon_host": (gluon_kernel, "triton"), "triton_host": (triton_kernel, "gluon"),
           "gluon": (gluon_kernel, "gluon"), "triton": (triton_kernel, "triton"), "nested": (gluon_kernel, "nested")}
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


def _layout(case: dict):
    warp = 64 if case["target"].startswith("gfx") else 32
    return gl.BlockedLayout([case["spt"]], [warp], [case["num_warps"]], [0])


def _inputs(case: dict):
    import torch
    generator = torch.Generator().manual_seed(case["seed"])
    return torch.randn(max(case["block"], 1), generator=generator) * 4


def reference(case: dict, x):
    """What the GPU computes, by torch: the cast rounds to nearest even (fp8 saturating), bf16 and
    fp16 arithmetic rounds each op; ``scale`` multiplies by an fp32 scalar in fp32."""
    import torch
    dtype = getattr(torch, TORCH_DTYPES[case["dtype"]])
    def rounded(values):   # fp32 values into the case's type and back
        if dtype.itemsize == 1:
            values = values.clamp(-torch.finfo(dtype).max, torch.finfo(dtype).max)
        return values.to(dtype).float()

    v = x.to(dtype) if dtype.itemsize > 1 else rounded(x)
    if case["op"] == "affine":   # torch has no fp8 arithmetic: each op in fp32, rounded, as the GPU's
        return (v * 2 + 1).float() if dtype.itemsize > 1 else rounded(rounded(v * 2) + 1)
    if case["op"] == "scale":
        return v.float() * case["scale"]
    return v.float().sum().reshape(1)


def _outcome(run) -> dict:
    try:
        return {"ok": True, "value": run()}
    except Exception as exc:   # the property compares what each side raised
        return {"ok": False, "error": type(exc).__name__, "kind": error_kind(exc), "message": str(exc)[:300]}


def run_case(case: dict) -> dict:
    """``case`` compiled for its target and interpreted; the interpreter's distance from torch."""
    import torch
    from hybrid import interpret
    (kernel, calls), layout = KERNELS[case["kind"]], _layout(case)
    constexprs = {"BLOCK": case["block"], "DT": getattr(tl, DTYPES[case["dtype"]]), "OP": case["op"], "L": layout,
                  "CALLS": calls}
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "fp32"}
    compiled = _outcome(lambda: hybrid.compile(kernel, signature, constexprs, target=case["target"],
                                               num_warps=case["num_warps"]).kernel_entries)
    x = _inputs(case)
    y = torch.full_like(x, float("nan"))

    def interpreted():
        interpret.launch(kernel, (1, ), x, y, case["scale"], **constexprs, num_warps=case["num_warps"],
                         target=case["target"])
        expected = reference(case, x)
        got = y[:expected.numel()]
        error = (got - expected).abs()
        if case["op"] == "sum":   # reduction order differs from torch's: bounded by the rounding of each add
            bound = expected.numel() and float(x.abs().sum()) * case["block"] * torch.finfo(
                getattr(torch, TORCH_DTYPES[case["dtype"]])).eps
            return {"mismatch": bool(error.max() > bound + 1e-6) or bool(got.isnan().any())}
        return {"mismatch": not torch.equal(got, expected)}
    return {"compile": compiled, "interpret": _outcome(interpreted)}


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(run_case(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
