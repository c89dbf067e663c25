"""Machine-code parity of whole-kernel ports (``hybrid.port.whole_kernel``, the last step of a port).

    python bench/whole_port_parity.py [--targets all] [--json PATH]

Every all-Triton kernel whose functions ``bench/port_parity.py`` ports (the tutorial-style kernels
of ``bench/parity_ports.py``, built as that script builds them), and the examples' all-Triton
kernels as their ``run("triton", ...)`` launches them on ``problem(*CHECK_SIZE)``, is ported whole
for each target and built as Gluon; its SASS (``cuobjdump``) or AMDGCN instructions, registers and
shared memory are compared with the Triton kernel's. Goal (the project's parity goal):
every kernel ports, instructions within 2%, shared memory no higher.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from bench.kernels import SUITE, load  # noqa: E402
from bench.output import table, write_json  # noqa: E402
from bench.port_parity import INSTRUCTION_GOAL, cases, kernel_name  # noqa: E402
from hybrid.port import PortError  # noqa: E402
from hybrid.port.launch import build_for_problem, run_variant  # noqa: E402
from hybrid.port.names import is_triton, jit_function  # noqa: E402
from hybrid.port.render import has_problem  # noqa: E402
from hybrid.port.whole_kernel import port_kernel  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

COLUMNS = ("kernel", "target", "instr port / orig", "regs port / orig", "smem B port / orig", "goal")


def kernels(target: str) -> list:
    """(kernel, signature, constexprs, options) of each all-Triton kernel, once; a ``str`` (why) for
    an example kernel that cannot be built from its ``problem()`` here."""
    out, seen = [], set()
    for _, kernel, signature, constexprs, options in (c for c in cases(target) if not isinstance(c, str)):
        if is_triton(jit_function(kernel)) and kernel_name(kernel) not in seen:
            seen.add(kernel_name(kernel))
            out.append((kernel, signature, constexprs, options))
    for example in filter(has_problem, load(SUITE)):
        for name, kernel in vars(example).items():
            kernel = jit_function(kernel)
            if not is_triton(kernel) or kernel.fn.__module__ != example.__name__ or run_variant(example, name) != "triton":
                continue
            try:
                out.append((kernel, *build_for_problem(example, name, "triton", target)))
            except Exception as exc:   # noqa: BLE001 - a row that says why
                out.append(f"{example.__name__}.{name}: not built from problem() here ({type(exc).__name__}: {exc})")
    return out


def row(kernel, signature: dict, constexprs: dict, options: dict, target: str) -> dict:
    out = {"kernel": kernel_name(kernel), "target": target}
    try:
        ported = port_kernel(kernel, signature, constexprs, target, path=Path(f"{jit_function(kernel).__name__}.py"),
                             **options)
    except PortError as exc:
        return {**out, "refused": str(exc)}
    port, original = ported.machine["port"], ported.machine["original"]
    ratio = port["instructions"] / original["instructions"]
    return {**out, "port": port, "original": original, "ratio": ratio,
            "goal": ratio <= INSTRUCTION_GOAL and port["shared_bytes"] <= original["shared_bytes"]}


def cells(r: dict) -> tuple:
    if "refused" in r:
        return r["kernel"], r["target"], "refused", "", "", r["refused"][:90]
    p, o = r["port"], r["original"]
    return (r["kernel"], r["target"], f"{p['instructions']} / {o['instructions']} ({r['ratio']:.3f})",
            f"{p['registers']} / {o['registers']}", f"{p['shared_bytes']} / {o['shared_bytes']}",
            "met" if r["goal"] else "MISSED")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="all")
    parser.add_argument("--json", default="build/whole_port_parity.json")
    args = parser.parse_args()
    rows = []
    for target in list(TARGETS) if args.targets == "all" else args.targets.split(","):
        for case in kernels(target):
            rows.append({"kernel": case.split(":")[0], "target": target, "refused": case} if isinstance(case, str)
                        else row(*case, target))
    Console().print(table("Whole kernels ported to Gluon from their own IR, against the Triton kernels", COLUMNS,
                          [cells(r) for r in rows]))
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
