"""Porting swept across real kernel libraries: every ``@triton.jit`` helper at every kernel that
calls it, and every kernel whole, for every target.

    python bench/port_sweep.py [--targets all] [--only KERNEL,...] [--json build/port_sweep.json]

The libraries (``bench/sweep_libraries.py``: Liger-Kernel and flash-linear-attention, installed
from the package registry by ``make port-sweep``) are driven through their own Python entry
points on small CPU tensors. Every kernel launch those calls make is recorded and run in the
interpreter (so a backward sees what its forward wrote), and each distinct launch is one case:
the kernel built as that launch specializes it. For each target, each helper it calls is ported
from Triton's IR (``hybrid.port.from_ttgir``) and swapped back in; the whole kernel is ported to
a pure ``@gluon.jit`` kernel where the project can (``hybrid.port.whole_kernel``). A row says:
ported from IR, or refused (the reason's first line); the machine code against the original
(instructions, registers, shared memory); and the interpreter's result of the ported kernel
against the original's on the recorded inputs. Goal: instructions within 2%, no more shared
memory, the interpreter's results equal. A row that compiles and disagrees is WRONG.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from triton.runtime.jit import KernelInterface  # noqa: E402

import hybrid  # noqa: E402
from bench.output import flagged, table, write_json  # noqa: E402
from bench.sweep_libraries import ENTRIES  # noqa: E402
from hybrid import interpret  # noqa: E402
from hybrid.interpret import autotune  # noqa: E402
from hybrid.port import PortError, from_ttgir, whole_kernel  # noqa: E402
from hybrid.port.compare import as_hybrid, compare, figures, with_region  # noqa: E402
from hybrid.port.launch import build_arguments  # noqa: E402
from hybrid.port.names import is_triton, jit_callees, jit_function  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

INSTRUCTION_GOAL = 1.02
#: the target the recorded launches run on in the interpreter (a plain Triton kernel runs alike on any)
CAPTURE_TARGET = "sm90a"
COLUMNS = ("library", "kernel", "ported", "target", "how", "instr port / orig", "smem B port / orig",
           "interpreter", "goal")


@dataclass
class Launch:
    """One launch of a library kernel: its JIT function, grid and arguments as they were before it ran."""
    library: str
    entry: str
    kernel: object
    grid: object
    args: tuple
    kwargs: dict

    @property
    def name(self) -> str:
        return f"{self.kernel.fn.__module__.rsplit('.', 1)[-1]}.{self.kernel.__name__}"


def _snapshot(values):
    return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in values)


@contextlib.contextmanager
def recording(library: str, entry: str, launches: list[Launch]):
    """Within the block, ``kernel[grid](...)`` of any Triton kernel is recorded (through
    ``@triton.autotune``/``@triton.heuristics``: the JIT function with the config the
    interpreter runs) and run in the interpreter."""
    def run(kernel, grid, *args, target=None, **kwargs):
        if autotune.is_wrapped(kernel):
            return autotune.launch_wrapped(run, kernel, grid, args, kwargs, target)
        launches.append(Launch(library, entry, kernel, grid, _snapshot(args),
                               {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}))
        return interpret.launch(kernel, grid, *args, target=target, **kwargs)

    original = KernelInterface.__getitem__
    KernelInterface.__getitem__ = lambda self, grid: (lambda *a, **k: run(self, grid, *a, target=CAPTURE_TARGET, **k))
    try:
        yield
    finally:
        KernelInterface.__getitem__ = original


def launches() -> tuple[list[Launch], list[dict]]:
    """Every distinct launch the entries make (one per kernel and specialization), and a row
    for each entry that could not run here."""
    found, failed, seen = [], [], set()
    for entry in ENTRIES:
        recorded: list[Launch] = []
        try:
            with recording(entry.library, entry.label, recorded):
                entry.call()
        except Exception as exc:   # noqa: BLE001 - a row that says why
            failed.append({"library": entry.library, "kernel": entry.label, "ported": "", "target": "",
                           "status": "not run", "why": _first_line(exc)})
        for launch in recorded:
            key = (id(launch.kernel), repr(build_arguments(launch.kernel, launch.args, launch.kwargs)))
            if key not in seen:
                seen.add(key)
                found.append(launch)
    return found, failed


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:240]


def helper_row(launch: Launch, fn, target: str, build: dict, original: dict) -> dict:
    """One helper of a kernel ported from Triton's IR at that kernel's launch, swapped back in."""
    out = {"library": launch.library, "kernel": launch.name, "ported": fn.__name__, "target": target,
           "original": original}
    try:
        ported = from_ttgir.port(launch.kernel, fn, build["signature"], build["constexprs"], target,
                                 **build["options"])
    except PortError as exc:   # a helper only a branch of another specialization calls is no row of this one
        return out | {"status": "not called" if "does not call" in str(exc) else "refused", "why": _first_line(exc)}
    candidate = from_ttgir.load_port(ported.source, ported.name, Path(f"{ported.name}.py"))
    swapped = hybrid.compile(with_region(launch.kernel, fn, candidate), build["signature"], build["constexprs"],
                             target, **build["options"])
    out |= {"status": "ir", "port": figures(swapped), "caveats": list(ported.caveats)}
    result = compare(launch.kernel, region=fn, candidate=candidate, grid=launch.grid, args=launch.args,
                     kwargs=launch.kwargs, interpret=True, target=target, machine_code_report=False)
    return out | {"interpreter": _verdict(result)}


def whole_row(launch: Launch, target: str, build: dict, original: dict) -> dict:
    """The whole kernel ported to a pure Gluon kernel (``hybrid.port.whole_kernel``), built and run
    in the interpreter on the launch's inputs against the kernel."""
    out = {"library": launch.library, "kernel": launch.name, "ported": "(whole kernel)", "target": target,
           "original": original}
    try:
        ported = whole_kernel.port_kernel(launch.kernel, build["signature"], build["constexprs"], target,
                                          **build["options"])
    except PortError as exc:
        return out | {"status": "refused", "why": _first_line(exc)}
    out |= {"status": "ir", "port": ported.machine["port"], "caveats": [ported.inlined] if ported.inlined else []}
    gluon_kernel = from_ttgir.load_port(ported.source, ported.name, Path(f"{ported.name}.py"))
    result = compare(launch.kernel, candidate=gluon_kernel, grid=launch.grid, args=launch.args, kwargs=launch.kwargs,
                     interpret=True, target=target, machine_code_report=False)   # each run on its own copies
    return out | {"interpreter": _verdict(result)}


def _verdict(result) -> str:
    if not result.outputs:
        return "nothing written"
    return "equal" if result.ok else "DIFFERENT"


def rows_for(launch: Launch, target: str) -> list[dict]:
    """Every helper of the launch's kernel, and the kernel whole, for one target."""
    signature, constexprs, options = build_arguments(launch.kernel, launch.args, launch.kwargs)
    build = {"signature": signature, "constexprs": constexprs, "options": options}
    base = {"library": launch.library, "kernel": launch.name, "target": target}
    try:
        original = figures(hybrid.compile(as_hybrid(launch.kernel), signature, constexprs, target, **options))
    except Exception as exc:   # noqa: BLE001 - the library's kernel itself does not build for this target
        return [base | {"ported": "", "status": "kernel not built", "why": _first_line(exc)}]
    rows = []
    for fn in [f for f in jit_callees(jit_function(launch.kernel)).values() if is_triton(f)]:
        rows.append(_guarded(helper_row, base | {"ported": fn.__name__}, launch, fn, target, build, original))
    rows.append(_guarded(whole_row, base | {"ported": "(whole kernel)"}, launch, target, build, original))
    return rows


def _guarded(make, base: dict, *args) -> dict:
    try:
        return _judged(make(*args))
    except Exception as exc:   # noqa: BLE001 - a port that fails past its own checks is a row, loudly
        return base | {"status": "FAILED", "why": _first_line(exc)}


def _judged(row: dict) -> dict:
    if row.get("status") != "ir":
        return row
    port, orig = row["port"], row["original"]
    row["ratio"] = port["instructions"] / orig["instructions"] if orig["instructions"] else None
    row["goal"] = bool(row["ratio"] is not None and row["ratio"] <= INSTRUCTION_GOAL
                       and port["shared_bytes"] <= orig["shared_bytes"] and row.get("interpreter") == "equal"
                       and not row.get("caveats"))
    return row


def cells(r: dict) -> tuple:
    head = (r["library"], r["kernel"], r.get("ported", ""), r.get("target", ""))
    if r.get("status") != "ir":
        return (*head, r.get("status", ""), "", "", "", flagged(r.get("why", ""))[:100])
    p, o = r["port"], r["original"]
    goal = "met" if r["goal"] else "MISSED" if r.get("interpreter") == "equal" else "WRONG"
    return (*head, "from IR", f"{p['instructions']} / {o['instructions']} ({r['ratio']:.3f})",
            f"{p['shared_bytes']} / {o['shared_bytes']}", flagged(r.get("interpreter", "")), flagged(goal))


def summary(rows: list[dict]) -> dict:
    """The sweep's figures: rows, ported from IR, at parity, wrong, and each refusal class with its
    count. A helper another specialization calls, and a library kernel that does not build for a
    target with the arguments the library gives it (32 warps on AMD), are no port rows."""
    rows = [r for r in rows if r.get("status") not in ("not called", "kernel not built")]
    ported = [r for r in rows if r.get("status") == "ir"]
    wrong = [r for r in ported if r.get("interpreter") == "DIFFERENT"]
    classes = Counter(_refusal_class(r) for r in rows if r.get("status") != "ir")
    return {"rows": len(rows), "ported_from_ir": len(ported), "at_parity": sum(r["goal"] for r in ported),
            "wrong": len(wrong), "refusals": dict(classes.most_common())}


_NAMES = re.compile(r"[0-9]+|'[^']*'|`[^`]*`")


def _refusal_class(r: dict) -> str:
    """A refusal's class: its status and the reason with names and numbers left out."""
    why = _NAMES.sub("_", r.get("why", "").split(": ", 1)[-1])
    return f"{r.get('status')}: {why[:90]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="all")
    parser.add_argument("--only", default="", help="kernel names (module.kernel or kernel), comma-separated")
    parser.add_argument("--json", default="build/port_sweep.json")
    args = parser.parse_args()
    targets = list(TARGETS) if args.targets == "all" else args.targets.split(",")
    only = set(filter(None, args.only.split(",")))
    found, rows = launches()
    for launch in found:
        if only and launch.name not in only and launch.kernel.__name__ not in only:
            continue
        for target in targets:
            rows.extend(rows_for(launch, target))
    shown = [r for r in rows if r.get("status") != "not called"]
    Console(width=200).print(table("Ports swept across installed kernel libraries", COLUMNS, [cells(r) for r in shown]))
    figures_ = summary(rows)
    print(f"{figures_['rows']} rows: {figures_['ported_from_ir']} ported from IR, {figures_['at_parity']} at parity, "
          f"{figures_['wrong']} wrong")
    for why, count in figures_["refusals"].items():
        print(f"  {count:4d}  {why}")
    write_json(args.json, {"summary": figures_, "rows": rows})


if __name__ == "__main__":
    main()
