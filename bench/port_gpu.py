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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.output import attempt, write_json  # noqa: E402
from bench.port_runs import Run, check, ported, runs  # noqa: E402

TIME_GOAL = 1.02
COLUMNS = ("port", "kernel", "size", "max error (norm-relative)", "kernel ms", "port ms", "port / kernel", "goal")


#: The ports timed, by ``Run.name``, and the size each is timed at (``Run.inputs(device, size)``).
TIMED = {
    "softmax_row@parity_ports.softmax_rows": 65536,   # its load a caller load the kernel's row loop pipelines
    "row_block@parity_ports.layer_norm_mean_pipelined": 16384,
    "normalize_store@parity_ports.layer_norm_fwd_store": 65536,
    "dropout_store@parity_ports.seeded_dropout": 1 << 26,
    "accumulate_partial@parity_ports.layer_norm_bwd_dx": 16384,   # 256 rows a lock: judged by the norm
}


def row(run: Run, size: int, target: str, folder: Path, rounds: int) -> dict:
    from triton.testing import do_bench

    from hybrid.port import with_region
    from hybrid.port.compare import as_hybrid
    candidate, given = ported(run, target, folder), run.inputs("cuda", size)
    checked = check(run, target, "cuda", folder, candidate=candidate, given=given)
    out = {"port": run.fn.__name__, "kernel": run.kernel.__name__, "size": size, "correct": checked.ok,
           "error": max((d.max_abs for d in checked.outputs), default=0.0),
           "relative_error": max((d.relative for d in checked.outputs), default=0.0)}
    if not checked.ok:
        return {**out, "failed": checked.report()[:300]}
    kwargs = run.launch_kwargs(given)
    versions = {"kernel": as_hybrid(run.kernel), "port": with_region(run.kernel, run.fn, candidate)}
    # compare's timing (the kernel, then the port) is the first round
    times = {"kernel": [checked.times_ms["original"]], "port": [checked.times_ms["candidate"]]}
    for _ in range(rounds - 1):   # round-robin, so that drift reaches both versions alike
        for version, k in versions.items():
            times[version].append(do_bench(lambda k=k: k[given.grid](*given.args, **kwargs), return_mode="median"))
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
    parser.add_argument("--only", default=",".join(TIMED), help="Run names (function@module.kernel)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="bench/port_gpu.json")
    args = parser.parse_args(argv)
    from interop.targets import current_gpu_target
    target = current_gpu_target()
    if target is None:
        print("port_gpu: no supported GPU here; bench/port_parity.py compares the ports' machine code on any machine")
        return 2
    by_name = {run.name: run for run in runs(target)}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only.split(","):
            run = by_name[name]
            measured, failed = attempt(row, run, TIMED[name], target, Path(folder), args.rounds)
            rows.append(measured or {"port": run.fn.__name__, "kernel": run.kernel.__name__, "size": TIMED[name],
                                     "failed": failed})
            print("| " + " | ".join(cells(rows[-1])) + " |", flush=True)
    print(markdown(rows))
    write_json(args.json, {"target": target, "gpu": rows})
    return 0 if all(r.get("correct") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
