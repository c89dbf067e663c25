"""Machine-code parity of hybrid kernels with the kernels they were ported from.

    python bench/parity.py [--targets all] [--only NAME,NAME] [--json PATH]

For every hybrid example (``bench.kernels.SUITE``, every case) and every port of an upstream
tutorial pattern (``bench/parity_ports.py``), the hybrid kernel and its all-Triton version (and
all-Gluon, where written) are built for every target, and their machine code compared: SASS
instructions (``cuobjdump -sass``) on NVIDIA, AMDGCN instructions on AMD, registers, shared
memory, the hybrid kernel's boundary conversions with each one's recorded reason, and the layout
conversions each kernel's final ttgir has, boundary or not (so that a boundary conversion that
all-Triton makes too, inside its own code, shows as such).
Goal, where the Gluon part does what the Triton code would have done: instructions within 2% of
the all-Triton kernel, shared memory no higher, zero boundary conversions. A row that misses it
says so; a hand-written Gluon part may legitimately differ (its layouts are the author's).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from bench.kernels import PURE, SUITE, case_label, cases, environment, load, variants  # noqa: E402
from bench.output import table, write_json  # noqa: E402
from bench.parity_ports import PORTS  # noqa: E402
from interop.instrumentation.resources import instructions, layout_conversions, resources  # noqa: E402
from interop.targets import TARGETS  # noqa: E402

INSTRUCTION_GOAL = 1.02   # hybrid / all-Triton instructions, at most
COLUMNS = ("kernel", "direction", "case", "target", "instr hybrid / triton (gluon)", "ratio", "regs h / t",
           "smem B h / t", "boundary cvt", "kernel cvt h / t", "goal")


def figures(compiled) -> dict:
    asm = compiled.asm
    metadata = compiled.metadata if isinstance(compiled.metadata, dict) else compiled.metadata._asdict()
    found = resources(asm, metadata)
    return {"instructions": instructions(asm), "registers": found["registers"], "shared_bytes": found["shared_bytes"],
            "layout_conversions": layout_conversions(asm["ttgir"])}


def direction(fb) -> str:
    languages = {r.language for r in fb.regions}
    return " + ".join(sorted({"triton": "gluon->triton", "gluon": "triton->gluon"}[lang] for lang in languages))


def row(name: str, case: str, target: str, builds: dict) -> dict:
    fb = builds["hybrid"]
    out = {"kernel": name, "direction": direction(fb), "case": case, "target": target,
           **{variant: figures(compiled) for variant, compiled in builds.items()},
           "boundary_conversions": sum(b.conversions for b in fb.boundaries),
           "converted": [{"region": b.function, "direction": b.direction, "value": b.value,
                          "conversions": b.conversions, "shared_bytes": b.shared_bytes, "reason": b.reason}
                         for b in fb.boundaries if b.conversions]}
    hybrid, triton = out["hybrid"], out.get("triton")
    if triton and hybrid["instructions"] and triton["instructions"]:
        out["ratio"] = hybrid["instructions"] / triton["instructions"]
        out["meets_goal"] = (out["ratio"] <= INSTRUCTION_GOAL and hybrid["shared_bytes"] <= triton["shared_bytes"]
                             and out["boundary_conversions"] == 0)
    return out


def example_rows(names, targets: list[str]) -> list[dict]:
    rows = []
    for example in load(names):
        name = example.__name__.rsplit(".", 1)[-1]
        for target in targets:
            if target in getattr(example, "SKIP", {}):
                continue
            for case in cases(example):
                builds = {"hybrid": example.build(target, **case)}
                builds.update({v: getattr(example, f"build_{v}")(target, **case) for v in PURE if v in variants(example)})
                rows.append(row(name, case_label(case), target, builds))
                gc.collect()
    return rows


def port_rows(names, targets: list[str]) -> list[dict]:
    rows = []
    for port in PORTS:
        if names and port.name not in names:
            continue
        for target in targets:
            if port.targets and target not in port.targets:
                continue
            builds = port.builds(target)
            rows.append({**row(port.name, "", target, builds), "direction": port.direction})
            gc.collect()
    return rows


def cells(r: dict) -> list[str]:
    h, t, g = r["hybrid"], r.get("triton", {}), r.get("gluon")
    instr = f"{h['instructions']} / {t.get('instructions', '-')}" + (f" ({g['instructions']})" if g else "")
    verdict = "" if "meets_goal" not in r else ("ok" if r["meets_goal"] else "missed")
    return [r["kernel"], r["direction"], r["case"], r["target"], instr, f"{r['ratio']:.3f}" if "ratio" in r else "-",
            f"{h['registers']} / {t.get('registers', '-')}", f"{h['shared_bytes']} / {t.get('shared_bytes', '-')}",
            str(r["boundary_conversions"]), f"{h['layout_conversions']} / {t.get('layout_conversions', '-')}", verdict]


def markdown(result: dict) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in result["rows"]]
    explained = [(r, c) for r in result["rows"] for c in r["converted"]]
    if explained:
        lines += ["", "Boundary conversions left, with their records' reasons:", ""]
        lines += [f"- {r['kernel']} {r['case']} {r['target']}: {c['region']} {c['direction']} {c['value']}, "
                  f"{c['conversions']} conversion(s), {c['shared_bytes']} B: {c['reason']}" for r, c in explained]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="all")
    parser.add_argument("--only", default="", help="examples or ports, comma-separated (default: all)")
    parser.add_argument("--json", default="bench/parity.json")
    parser.add_argument("--markdown", default=None, help="also write the Markdown table here")
    args = parser.parse_args(argv)
    targets = list(TARGETS) if args.targets == "all" else args.targets.split(",")
    only = [n for n in args.only.split(",") if n]
    examples = [n for n in SUITE if not only or n in only]
    result = {"environment": environment(),
              "rows": example_rows(examples, targets) + port_rows(only, targets)}
    Console().print(table("Parity with the all-Triton kernels", COLUMNS, [cells(r) for r in result["rows"]]))
    write_json(args.json, result)
    if args.markdown:
        Path(args.markdown).write_text(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
