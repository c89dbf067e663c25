"""Every port of ``bench/port_parity.py`` run against its kernel: what each kernel is launched with.

    python bench/port_runs.py [--targets all] [--device cpu|cuda] [--json PATH]

A port at machine-code parity must also compute what its kernel computes. For every case of
``port_parity.cases`` and ``port_parity.example_cases`` this gives the kernel's launch on a device,
on fresh random inputs: an example's kernel as its own ``problem()``/``run()`` launch it
(``hybrid.port.launch.capture_launch``), the upstream-style kernels of ``bench/parity_ports.py``
from ``INPUTS``. ``check`` ports the function and compares the kernel with and without the port
(``hybrid.port.compare``): in the interpreter on ``"cpu"`` (``tests/test_port_runs.py``), on the
GPU on ``"cuda"`` (``tests/test_port_gpu.py``, ``bench/port_gpu.py``).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton  # noqa: E402
from rich.console import Console  # noqa: E402

from bench import parity_ports as pp  # noqa: E402
from bench.output import attempt, table, write_json  # noqa: E402
from bench.port_parity import cases, example_cases, kernel_name  # noqa: E402
from examples.layouts import use_torch_allocator  # noqa: E402
from hybrid.port import compare, from_ttgir  # noqa: E402
from hybrid.port.launch import capture_launch, run_variant  # noqa: E402
from hybrid.port.names import jit_function  # noqa: E402


@dataclass(frozen=True)
class Inputs:
    """One launch of a kernel: grid, arguments (fresh tensors on the device) and how closely the
    kernel with the port must match it (``atol`` = ``rtol`` = ``tolerance``; ``relative_tolerance``
    where the kernel sums in an order that varies between runs: ``hybrid.port.compare``)."""
    grid: object
    args: tuple
    tolerance: float
    relative_tolerance: float | None = None
    kwargs: dict | None = None   # the launch's keywords where they are not the case's (an example's run())


@dataclass(frozen=True)
class Run:
    """A case of ``bench/port_parity.py`` and the inputs of its kernel: ``inputs(device)`` at the size
    the tests check, ``inputs(device, size)`` scaled (``bench/port_gpu.py`` times at a larger one)."""
    fn: object
    kernel: object
    signature: dict
    constexprs: dict
    options: dict
    inputs: Callable[..., Inputs]

    @property
    def name(self) -> str:
        return f"{self.fn.__name__}@{kernel_name(self.kernel)}"

    def launch_kwargs(self, given: Inputs) -> dict:
        """The launch's keywords: the case's constexprs and launch options (not build-only ones)."""
        if given.kwargs is not None:
            return given.kwargs
        return {**self.constexprs, **{k: v for k, v in self.options.items() if k in ("num_warps", "num_stages")}}


def _randn(device: str, *shape, dtype=None):
    import torch
    return torch.randn(*shape, device=device, dtype=dtype or torch.float32)


def _zeros(device: str, *shape, dtype=None):
    import torch
    return torch.zeros(*shape, device=device, dtype=dtype or torch.float32)


def _vector_add(device: str, n: int = 3000) -> Inputs:
    return Inputs((triton.cdiv(n, 1024), ), (_randn(device, n), _randn(device, n), _zeros(device, n), n), 1e-6)


def _matmul_act(device: str, size: int = 128) -> Inputs:
    import torch
    h = lambda: _randn(device, size, size, dtype=torch.float16)   # noqa: E731 - A, B and C are K x K
    return Inputs((size // 128, size // 128), (h(), h(), _zeros(device, size, size, dtype=torch.float16), size), 1e-2)


def _layernorm(device: str, rows: int = 8) -> Inputs:
    import torch
    cols = 1000
    h = lambda *shape: _randn(device, *shape, dtype=torch.float16)   # noqa: E731
    y = _zeros(device, rows, cols, dtype=torch.float16)
    return Inputs((triton.cdiv(rows, 4), ), (h(rows, cols), h(cols), h(cols), y, cols, 1e-5), 1e-2)


def _layer_norm_fwd(device: str, rows: int = 6) -> Inputs:
    import torch
    cols = 1000
    h = lambda *shape: _randn(device, *shape, dtype=torch.float16)   # noqa: E731
    return Inputs((rows, ), (h(rows, cols), _zeros(device, rows, cols, dtype=torch.float16), h(cols), h(cols),
                             _zeros(device, rows), _zeros(device, rows), cols, cols), 1e-2)


def _layer_norm_store(device: str, rows: int = 64) -> Inputs:
    import torch
    N = 1000
    x, w, b = (_randn(device, *shape).half() for shape in ((rows, N), (N, ), (N, )))
    return Inputs((rows, ), (x, _zeros(device, rows, N, dtype=torch.float16), w, b, _zeros(device, rows),
                             _zeros(device, rows), N, N, 1e-5), 1e-2)


def _dropout(device: str, n: int = 100_000) -> Inputs:
    return Inputs(((n + 1023) // 1024, ), (_randn(device, n), _zeros(device, n), n, 0.5, 123), 0)


def _layer_norm_bwd(device: str, rows: int = 64) -> Inputs:
    """64 locks: at the size checked, one row a lock and sums in a fixed order; at a larger size
    each lock's fp16 partial sums arrive in the order the locks are won, which differs between
    runs of the kernel itself, so its outputs are judged by their norm."""
    import torch
    N, groups = 1000, 64
    h = lambda *shape: _randn(device, *shape).half()   # noqa: E731
    x, dy, w = h(rows, N), h(rows, N), h(N)
    mean, rstd = x.float().mean(1), 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
    return Inputs((rows, ), (_zeros(device, rows, N).half(), dy, _zeros(device, groups, N).half(),
                             _zeros(device, groups, N).half(), x, w, mean, rstd,
                             _zeros(device, 2 * groups, dtype=torch.int32), N, N),
                  2e-2, relative_tolerance=1e-2 if rows > groups else None)


def _softmax_rows(device: str, rows: int = 64) -> Inputs:
    cols = 1000   # (strides of 1000: no multiple of 16, as the ports are written for)
    x = _randn(device, rows, cols)
    return Inputs((min(rows, 132), ), (_zeros(device, rows, cols), x, cols, cols, rows, cols), 1e-5)


def _layer_norm_mean(device: str, rows: int = 8) -> Inputs:
    import torch
    cols = 4096   # (fp16 rows of a stride that is a multiple of 16, as the port is written for)
    return Inputs((rows, ), (_randn(device, rows, cols, dtype=torch.float16), _zeros(device, rows), cols, cols), 1e-4)


def _matmul_k_loop(device: str, size: int = 128) -> Inputs:
    import torch
    M, N, K = size, size, size - 32   # K not a multiple of BLOCK_SIZE_K: the loop's masks matter
    a, b = _randn(device, M, K, dtype=torch.float16), _randn(device, K, N, dtype=torch.float16)
    c = _zeros(device, M, N, dtype=torch.float16)
    return Inputs((triton.cdiv(M, 128) * triton.cdiv(N, 128), ),
                  (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)),
                  1e-2)


def _attention(device: str, n_ctx: int = 256) -> Inputs:
    import torch
    heads, head_dim = 2, 64
    q, k, v = (_randn(device, heads, n_ctx, head_dim, dtype=torch.float16) for _ in range(3))
    return Inputs(lambda meta: (triton.cdiv(n_ctx, meta["BM"]), heads),   # (BM: the target's tiles)
                  (q, k, v, torch.zeros_like(q), head_dim ** -0.5, n_ctx), 1e-2)


def _persistent(device: str, size: int = 256) -> Inputs:
    import torch
    if device != "cpu":   # (the interpreter makes descriptors without scratch memory)
        use_torch_allocator()
    M = N = K = size
    a, b = _randn(device, M, K, dtype=torch.float16), _randn(device, N, K, dtype=torch.float16)   # B N-major
    tiles = triton.cdiv(M, 128) * triton.cdiv(N, 128)
    return Inputs((min(132, tiles), ), (a, b, _zeros(device, M, N, dtype=torch.float16), M, N, K), 1e-2)


def _fused_attention(device: str, heads: int = 2) -> Inputs:
    """Upstream's attention forward (``pp.attn_fwd``) at its constexpr context length, ``heads``
    batch-heads (Z = 1)."""
    import torch
    n_ctx, head_dim = pp.ATTN_CONSTEXPRS["N_CTX"], pp.ATTN_CONSTEXPRS["HEAD_DIM"]
    q, k, v = (_randn(device, heads * n_ctx, head_dim, dtype=torch.float16) for _ in range(3))
    return Inputs((n_ctx // pp.ATTN_CONSTEXPRS["BLOCK_M"], heads),
                  (head_dim ** -0.5, _zeros(device, heads * n_ctx), 1, heads, q, k, v, torch.zeros_like(q)), 1e-2)


def _attention_backward(device: str, heads: int = 1) -> Inputs:
    """Upstream's attention backward (``pp._attn_bwd``) at its context length, ``heads`` heads
    (Z = 1), as upstream's ``backward`` launches it: K pre-scaled by ``sm_scale / ln 2``, M the
    forward's causal row log2-sum-exp2, D = rowsum(O * dO), on grid (N_CTX // BLOCK_N1, 1, Z * H)."""
    import math
    import torch
    n_ctx, head_dim, sm_scale = 128, pp.ATTN_BWD_CONSTEXPRS["HEAD_DIM"], 0.5
    q, k, v, do = (_randn(device, 1, heads, n_ctx, head_dim).mul(0.5).half() for _ in range(4))
    arg_k = (k.float() * (sm_scale / math.log(2))).half()
    qk = (q.float() @ arg_k.float().transpose(-1, -2)).masked_fill(
        ~torch.ones(n_ctx, n_ctx, dtype=torch.bool, device=device).tril(), float("-inf"))
    m = torch.logsumexp(qk * math.log(2), dim=-1) / math.log(2)
    delta = ((torch.exp2(qk - m[..., None]) @ v.float()) * do.float()).sum(-1)
    dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
    constexprs = pp.ATTN_BWD_CONSTEXPRS
    # stride_d (1) is a constexpr here, as Triton's JIT specializes it: H and N_CTX follow it by name
    kwargs = {**constexprs, "H": heads, "N_CTX": n_ctx,
              **{k: v for k, v in pp.ATTN_BWD_OPTIONS.items() if k in ("num_warps", "num_stages")}}
    return Inputs((n_ctx // constexprs["BLOCK_N1"], 1, heads),
                  (q, arg_k, v, sm_scale, do, dq, dk, dv, m.contiguous(), delta.contiguous(), *q.stride()[:3]),
                  1e-2, kwargs=kwargs)


#: The inputs of each upstream-style kernel of ``bench/parity_ports.py`` that a case ports from.
INPUTS: dict[object, Callable[..., Inputs]] = {
    pp.add_gluon_host: _vector_add, pp.add_triton: _vector_add,
    pp.matmul_act_gluon_host: _matmul_act, pp.matmul_act_triton: _matmul_act,
    pp.layernorm_gluon_host: _layernorm, pp.layer_norm_fwd: _layer_norm_fwd,
    pp.layer_norm_bwd_dx: _layer_norm_bwd, pp.layer_norm_fwd_store: _layer_norm_store, pp.seeded_dropout: _dropout,
    pp.layer_norm_mean: _layer_norm_mean, pp.layer_norm_mean_pipelined: _layer_norm_mean,
    pp.matmul_k_loop: _matmul_k_loop, pp.softmax_rows: _softmax_rows, pp.softmax_rows_by_loop: _softmax_rows,
    pp.attention_gluon_host: _attention, pp.matmul_descriptor_persistent_gluon_host: _persistent,
    pp.matmul_descriptor_persistent: _persistent, pp.matmul_descriptor_persistent_gluon_tma: _persistent,
    pp.matmul_descriptor_persistent_tma: _persistent, pp.matmul_descriptor_persistent_subtiled: _persistent,
    pp.attn_fwd: _fused_attention, pp._attn_bwd: _attention_backward,
}


def _example_inputs(kernel, target: str) -> Callable[..., Inputs]:
    """An example kernel's launch by its module's ``run()`` on ``problem(*CHECK_SIZE)``."""
    module = sys.modules[jit_function(kernel).fn.__module__]
    name = next(n for n, v in vars(module).items() if jit_function(v) is jit_function(kernel))
    variant = run_variant(module, name)

    def inputs(device: str, size=None) -> Inputs:
        with capture_launch(module, name) as recorder:
            module.run(variant, module.problem(*(size or module.CHECK_SIZE), device=device), target)
        launch = recorder.launch
        return Inputs(launch.grid, launch.args, module.TOLERANCE, kwargs=launch.kwargs)
    return inputs


def runs(target: str) -> list[Run]:
    """Every case of ``bench/port_parity.py`` for ``target`` whose kernel can be launched here."""
    out = []
    for case in cases(target) + example_cases(target):
        if isinstance(case, str):   # an example kernel not built from its problem() (the bench says why)
            continue
        fn, kernel, signature, constexprs, options = case
        inputs = INPUTS.get(kernel) or (_example_inputs(kernel, target) if kernel not in vars(pp).values() else None)
        if inputs is None:
            raise LookupError(f"bench/port_runs.py: no inputs for {kernel_name(kernel)}, which ports "
                              f"{fn.__name__}: add its builder to INPUTS")
        out.append(Run(fn, kernel, signature, constexprs, options, inputs))
    return out


def ported(run: Run, target: str, folder: Path):
    """The run's port for ``target``, loaded as a ``@gluon.jit`` function."""
    port = from_ttgir.port(run.kernel, run.fn, run.signature, run.constexprs, target, **run.options)
    return from_ttgir.load_port(port.source, port.name, folder / f"{port.name}.py")


def check(run: Run, target: str, device: str, folder: Path, machine_code_report: bool = False, candidate=None,
          given: Inputs | None = None):
    """The kernel with and without the port (``candidate``, else ported here) on the same inputs
    (``given``, else fresh ones at the size checked): ``hybrid.port.compare``'s result (in the
    interpreter on ``"cpu"``, on the GPU and timed on ``"cuda"``)."""
    candidate = candidate or ported(run, target, folder)
    given = given or run.inputs(device)
    return compare(run.kernel, region=run.fn, candidate=candidate, grid=given.grid, args=given.args,
                   kwargs=run.launch_kwargs(given), interpret=device == "cpu", target=target, atol=given.tolerance,
                   rtol=given.tolerance, relative_tolerance=given.relative_tolerance,
                   machine_code_report=machine_code_report)


COLUMNS = ("function", "kernel", "target", "device", "outputs: max abs difference", "result")


def result_row(run: Run, target: str, device: str, folder: Path) -> dict:
    checked = check(run, target, device, folder)
    return {"function": run.fn.__name__, "kernel": kernel_name(run.kernel), "target": target, "device": device,
            "outputs": {o.name: o.max_abs for o in checked.outputs}, "same": checked.ok}


def main(argv=None) -> int:
    from interop.targets import TARGETS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="all")
    parser.add_argument("--device", default="cpu", help="cpu: in the interpreter; cuda: on the GPU")
    parser.add_argument("--json", default="build/port_runs.json")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for target in list(TARGETS) if args.targets == "all" else args.targets.split(","):
            for run in runs(target):
                measured, failed = attempt(result_row, run, target, args.device, Path(folder))
                rows.append(measured or {"function": run.fn.__name__, "kernel": kernel_name(run.kernel),
                                         "target": target, "device": args.device, "outputs": {}, "same": False,
                                         "failed": failed})
    Console(width=200).print(table("Each port against its kernel, on the same fresh inputs", COLUMNS, (
        [r["function"], r["kernel"], r["target"], r["device"],
         ", ".join(f"{k} {v:.2g}" for k, v in r["outputs"].items()),
         "same" if r["same"] else "FAILED: " + r.get("failed", "outputs differ")] for r in rows)))
    print(f"{sum(r['same'] for r in rows)} of {len(rows)} ports compute what their kernels compute")
    write_json(args.json, rows)
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
