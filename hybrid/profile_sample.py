"""A synthetic sample of Proton's trace for ``hybrid profile --sample``: the per-region view on
a machine without a GPU.

The scopes are real: the example (``examples/matmul_wgmma.py`` on sm90a: a Gluon wgmma mainloop
with two Triton regions, ``tile_ids`` before it and ``store_tile_triton`` after) is built with
region instrumentation, as a profiled launch builds it, and its ``proton.record`` pairs are read
from the TritonGPU IR in order. The cycles are made up (no GPU recorded them): each region scope
takes its machine instructions (``fb.report()``) times ``CYCLES_PER_INSTRUCTION``, the host code
between records the rest of the kernel's instructions alike, each figure jittered per warp from a
fixed seed. The file says so (``otherData.synthetic``, first in the file) and ``hybrid profile``
prints that line with the tables.

    python -m examples.profile_sample regenerate    # from a checkout: hybrid does not import examples
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

PATH = Path(__file__).resolve().parent / "data" / "matmul_wgmma_sm90a.synthetic.chrome_trace"
EXAMPLE, TARGET = "matmul_wgmma", "sm90a"
CTAS, SEED, CYCLES_PER_INSTRUCTION, JITTER = 4, 0, 4, 0.15
#: what ``note`` finds in the head of a trace file
_NOTE = re.compile(rb'"synthetic":\s*"((?:[^"\\]|\\.)*)"')


def note(path: str | Path) -> str | None:
    """The trace's synthetic-data notice, if it has one (read from its first bytes only: a real
    trace can be large)."""
    with open(path, "rb") as f:
        found = _NOTE.search(f.read(4096))
    return json.loads(b'"' + found.group(1) + b'"') if found else None


def records(ttgir: str) -> list[tuple[str, str]]:
    """``(start|end, scope)`` of each ``proton.record`` in the IR, in order."""
    return re.findall(r'proton\.record (start|end) "([^"]+)"', ttgir)


def trace(kernel: str, scopes: list[tuple[str, str]], costs: dict[str, int], host: int, num_warps: int) -> dict:
    """Proton's Chrome trace of ``CTAS`` CTAs of one launch: every warp runs the scopes in order,
    a scope taking ``costs[scope]`` cycles of its own and the host code between two records an
    equal share of ``host`` (the outermost scope is the kernel's), each jittered per warp."""
    rng = random.Random(SEED)
    stretch = host / _host_stretches(scopes)
    events = []
    for cta in range(CTAS):
        for warp in range(num_warps):
            t, open_scopes = float(rng.randrange(0, 200)), []
            for kind, name in scopes:
                if len(open_scopes) == 1:   # only the kernel scope open: host code runs before this record
                    t += stretch * rng.uniform(1 - JITTER, 1 + JITTER)
                if kind == "start":
                    open_scopes.append((name, t))
                    continue
                _, start = open_scopes.pop()
                t += costs.get(name, 0) * rng.uniform(1 - JITTER, 1 + JITTER)
                events.append({"name": name, "cat": kernel, "ph": "X", "pid": f"{kernel} Core{cta} CTA{cta}",
                               "tid": f"warp {warp} (line {len(open_scopes)})", "ts": round(start) / 1000,
                               "dur": round(t - start) / 1000, "args": {"Frequency (MHz)": 1000.0}})
    text = (f"SYNTHETIC sample, not measured: {kernel} of examples/{EXAMPLE}.py on {TARGET}, its real region "
            f"scopes with made-up cycles ({CYCLES_PER_INSTRUCTION} per machine instruction, +-{JITTER:.0%} per "
            f"warp); made by python -m examples.profile_sample regenerate")
    return {"otherData": {"synthetic": text}, "displayTimeUnit": "ns", "traceEvents": events}


def _host_stretches(scopes: list[tuple[str, str]]) -> int:
    """Stretches of host code: between two records with only the kernel scope open."""
    depth, stretches = 0, 0
    for kind, _ in scopes:
        stretches += depth == 1
        depth += 1 if kind == "start" else -1
    return max(1, stretches)
