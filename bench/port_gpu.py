"""Ports against their kernels on a GPU: each upstream-style helper ``hybrid port`` writes for the
GPU's target is swapped into its kernel, checked against the kernel as written and both are timed.

    python bench/port_gpu.py [--json PATH] [--rounds 3]      (needs a GPU; ``make gpu-check`` runs it)

Time: the mean of ``--rounds`` ``do_bench`` medians per version, taken round-robin; their spread is
the noise. Goal: port time / kernel time <= 1.02, met within the noise. ``bench/port_parity.py``
holds the machine-code side of the same ports, for every target, on any machine.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import parity_ports as pp  # noqa: E402
from bench.output import attempt, write_json  # noqa: E402

TIME_GOAL = 1.02
COLUMNS = ("port", "kernel", "size", "max error (norm-relative)", "kernel ms", "port ms", "port / kernel", "goal")


def _layer_norm_store(device, M: int = 64):
    import torch
    N = 1000
    x, w, b = (torch.randn(*shape, device=device).half() for shape in ((M, N), (N, ), (N, )))
    return (M, ), (x, torch.zeros(M, N, device=device).half(), w, b, torch.zeros(M, device=device),
                   torch.zeros(M, device=device), N, N, 1e-5), 1e-2


def _dropout(device, n: int = 100_000):
    import torch
    return ((n + 1023) // 1024, ), (torch.randn(n, device=device), torch.zeros(n, device=device), n, 0.5, 123), 0


def _layer_norm_bwd(device, M: int = 64):
    import torch
    N, groups = 1000, 64
    h = lambda *shape: torch.randn(*shape, device=device).half()   # noqa: E731
    x, dy, w = h(M, N), h(M, N), h(N)
    mean, rstd = x.float().mean(1), 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
    zeros = lambda *shape, **kw: torch.zeros(*shape, device=device, **kw)   # noqa: E731
    return (M, ), (zeros(M, N).half(), dy, zeros(groups, N).half(), zeros(groups, N).half(), x, w, mean, rstd,
                   zeros(2 * groups, dtype=torch.int32), N, N), 2e-2


def _softmax_rows(device, rows: int = 4096):
    import torch
    cols = 1000   # (strides of 1000: no multiple of 16, as the port is written for)
    x = torch.randn(rows, cols, device=device)
    return (132, ), (torch.zeros_like(x), x, cols, cols, rows, cols), 1e-5


def _layer_norm_mean(device, rows: int = 512):
    import torch
    cols = 4096   # (fp16 rows of a stride that is a multiple of 16, as the port is written for)
    return (rows, ), (torch.randn(rows, cols, device=device).half(), torch.zeros(rows, device=device), cols,
                      cols), 1e-4


@dataclass(frozen=True)
class Case:
    """A port's case: the function, its kernel and what ``from_ttgir.port`` builds it for; the
    kernel's inputs, ``inputs(device, size)`` (``size`` scales the problem and has a default,
    which ``tests/test_port_gpu.py`` checks), and the size this script times."""
    fn: object
    kernel: object
    signature: dict
    constexprs: dict
    options: dict
    inputs: Callable
    timed_size: int
    #: Outputs summed in an order that varies between runs: judged by ``||port - kernel|| / ||kernel||``.
    relative_tolerance: float | None = None


CASES = {
    "softmax_row": Case(pp.softmax_row, pp.softmax_rows, pp.SOFTMAX_ROWS, {"BLOCK_SIZE": 1024, "num_stages": 2},
                        {"num_warps": 8}, _softmax_rows, 65536),   # its load a caller load the row loop pipelines
    "row_block": Case(pp.row_block, pp.layer_norm_mean_pipelined, pp.LAYER_NORM_MEAN, {"BLOCK_SIZE": 1024},
                      {"num_warps": 4, "divisible": ("stride", "N")}, _layer_norm_mean, 16384),
    "normalize_store": Case(pp.normalize_store, pp.layer_norm_fwd_store, pp.LAYER_NORM_STORE, {"BLOCK_SIZE": 1024},
                            {"num_warps": 4}, _layer_norm_store, 65536),
    "dropout_store": Case(pp.dropout_store, pp.seeded_dropout, pp.SEEDED_DROPOUT, {"BLOCK_SIZE": 1024},
                          {"num_warps": 4}, _dropout, 1 << 26),
    # 256 rows a lock at the timed size: each group's fp16 partial sums come in the order the locks
    # are won, so two runs of the kernel itself differ element by element (fp16 rounding).
    "accumulate_partial": Case(pp.accumulate_partial, pp.layer_norm_bwd_dx, pp.LAYER_NORM_BWD,
                               {"GROUP_SIZE_M": 64, "BLOCK_SIZE_N": 1024}, {"num_warps": 8}, _layer_norm_bwd, 16384,
                               relative_tolerance=1e-2),
}


def ported(name: str, target: str, folder: Path):
    """The case's port for ``target``, loaded as a ``@gluon.jit`` function."""
    from hybrid.port import from_ttgir
    case = CASES[name]
    port = from_ttgir.port(case.kernel, case.fn, case.signature, case.constexprs, target, **case.options)
    return from_ttgir.load_port(port.source, port.name, folder / f"{port.name}.py")


def row(name: str, target: str, folder: Path, rounds: int) -> dict:
    from triton.testing import do_bench

    from hybrid.port import compare, with_region
    from hybrid.port.compare import as_hybrid
    case = CASES[name]
    candidate = ported(name, target, folder)
    grid, args, tolerance = case.inputs("cuda", case.timed_size)
    kwargs = {**case.constexprs, "num_warps": case.options["num_warps"]}
    checked = compare(case.kernel, region=case.fn, candidate=candidate, grid=grid, args=args, kwargs=kwargs,
                      interpret=False, target=target, atol=tolerance, rtol=tolerance, machine_code_report=False,
                      relative_tolerance=case.relative_tolerance)
    out = {"port": name, "kernel": case.kernel.__name__, "size": case.timed_size, "correct": checked.ok,
           "error": max((d.max_abs for d in checked.outputs), default=0.0),
           "relative_error": max((d.relative for d in checked.outputs), default=0.0)}
    if not checked.ok:
        return {**out, "failed": checked.report()[:300]}
    versions = {"kernel": as_hybrid(case.kernel), "port": with_region(case.kernel, case.fn, candidate)}
    times = {version: [] for version in versions}
    for _ in range(rounds):   # round-robin, so that drift reaches both versions alike
        for version, k in versions.items():
            times[version].append(do_bench(lambda k=k: k[grid](*args, **kwargs), return_mode="median"))
    kernel_ms, port_ms = (statistics.mean(times[v]) for v in ("kernel", "port"))
    noise = max(max(t) / min(t) - 1 for t in times.values())
    return {**out, "times_ms": times, "kernel_ms": kernel_ms, "port_ms": port_ms, "ratio": port_ms / kernel_ms,
            "noise": noise, "meets_goal": port_ms / kernel_ms <= TIME_GOAL + noise}


def cells(r: dict) -> list[str]:
    head = [r["port"], r["kernel"], str(r["size"])]
    if "failed" in r:
        return [*head, _error(r), "", "", "", f"FAILED: {r['failed']}"]
    return [*head, _error(r), f"{r['kernel_ms']:.4f}", f"{r['port_ms']:.4f}", f"{r['ratio']:.3f}",
            ("met" if r["meets_goal"] else "MISSED") + f" (noise {100 * r['noise']:.1f}%)"]


def _error(r: dict) -> str:
    return f"{r['error']:.1e} ({r['relative_error']:.1e})" if "error" in r else "-"


def markdown(rows: list[dict]) -> str:
    lines = [f"Ports against their kernels (`bench/port_gpu.py`, port / kernel time, goal <= {TIME_GOAL}):", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return "\n".join(lines + ["| " + " | ".join(cells(r)) + " |" for r in rows])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=None, help="ignored but for the GPU's own target (gpu_check passes it)")
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="bench/port_gpu.json")
    args = parser.parse_args(argv)
    from interop.targets import current_gpu_target
    target = current_gpu_target()
    if target is None:
        print("port_gpu: no supported GPU here; bench/port_parity.py compares the ports' machine code on any machine")
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only.split(","):
            measured, failed = attempt(row, name, target, Path(folder), args.rounds)
            rows.append(measured or {"port": name, "kernel": CASES[name].kernel.__name__,
                                     "size": CASES[name].timed_size, "failed": failed})
            print("| " + " | ".join(cells(rows[-1])) + " |", flush=True)
    print(markdown(rows))
    write_json(args.json, {"target": target, "gpu": rows})
    return 0 if all(r.get("correct") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
