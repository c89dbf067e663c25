"""Static per-region report of a fused kernel: what each region costs inside the one binary.

Every op keeps the source line it came from through Triton's and Gluon's passes, and the binary
carries them as line info (each SASS instruction's, read by nvdisasm; the AMDGCN's ``.loc``). A
region is known by the lines of its own lowering (``Region.lines``, its helpers' lines included);
every other known line is the host's (its own helpers and library calls too). A line several
regions share (a library helper both use) counts as ``shared``; code with no line (constants,
conversions a pass created) as ``unattributed``. A library line a region and the host both use
counts for the region. The buckets add up to the kernel's totals by construction.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from interop.boundary import TAG
from interop.locations import op_lines
from interop.region import Region
from interop.instrumentation.resources import resources, sass_instructions, sass_lines

from .report import Report

HOST, SHARED, NONE, BOUNDARY = "host", "shared", "unattributed", "boundary conversions"


class Owners:
    """``file:line`` -> the bucket it belongs to."""

    def __init__(self, regions: list[Region]):
        self.owners: dict[str, set[str]] = {}
        for region in regions:
            for line in region.lines:
                self.owners.setdefault(line, set()).add(bucket(region))

    def __call__(self, where: str | None) -> str:
        if where is None:
            return NONE
        owners = self.owners.get(where, set())
        if len(owners) == 1:
            return next(iter(owners))
        return SHARED if owners else HOST


def bucket(region: Region) -> str:
    return f"r{region.index} {region.function}"


def ttgir_ops(ttgir: str, owner: Owners) -> Counter:
    counts: Counter = Counter()
    for name, where, text in op_lines(ttgir):
        counts[BOUNDARY if TAG in text and name == "ttg.convert_layout" else owner(where)] += 1
    return counts


def line_instructions(assembly: str, name: str) -> Counter:
    """Machine instructions of kernel ``name`` per source ``file:line`` (``None``: no line)."""
    return Counter(where for where, _ in attributed_instructions(assembly, name))


def attributed_instructions(assembly: str, name: str) -> Iterator[tuple[str | None, str]]:
    """Each machine instruction of kernel ``name``, in order, with the source ``file:line`` its
    ``.loc`` gives it (``None``: no line)."""
    files = {number: "/".join(part for part in (directory, base) if part)   # PTX lists them after the code
             for number, directory, base in re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?',
                                                       assembly, re.M)}
    where = None
    for line in _body(assembly, name):
        if line.startswith(".loc"):
            number, line_no = line.split()[1:3]
            where = f"{files.get(number, '?')}:{line_no}" if line_no != "0" else None
        elif _is_instruction(line):
            yield where, line


@dataclass
class LineCode:
    """What one source line compiled to, in order: its TritonGPU ops and machine instructions."""
    ttgir: list[str] = field(default_factory=list)
    machine: list[str] = field(default_factory=list)
    language: str = ""     # of ``machine``: SASS, AMDGCN, or PTX where nvdisasm is missing


def code_by_line(fb) -> dict[str, LineCode]:
    """``file:line`` -> its ``LineCode`` in ``fb`` (the HTML report's drill-down), for each line
    that has any."""
    code: dict[str, LineCode] = {}
    for _, where, text in op_lines(fb.asm["ttgir"]):
        if where:
            code.setdefault(where, LineCode()).ttgir.append(re.sub(r"\s+loc\([^()]*\)$", "", text))
    language = machine_language(fb)
    for where, instruction in machine_instructions(fb):
        if where:
            code.setdefault(where, LineCode()).machine.append(instruction)
    for line in code.values():
        line.language = language
    return code


def machine_instructions(fb) -> list[tuple[str | None, str]]:
    """Each machine instruction of a build with its source ``file:line``, as
    ``machine_line_instructions`` counts them: SASS on NVIDIA, AMDGCN on AMD (PTX where nvdisasm
    is missing)."""
    found = sass_instructions(fb.asm["cubin"]) if "cubin" in fb.asm else None
    return found if found is not None else list(attributed_instructions(fb.assembly, fb.name))


def machine_language(fb) -> str:
    """The name of what ``machine_instructions`` lists: ``SASS``, ``AMDGCN`` or ``PTX``."""
    if "cubin" not in fb.asm:
        return "AMDGCN"
    return "SASS" if sass_instructions(fb.asm["cubin"]) is not None else "PTX"


def machine_line_instructions(fb) -> Counter:
    """Machine instructions of a build per source ``file:line``: SASS on NVIDIA (the cubin's line
    info), AMDGCN on AMD, so that they add up to the kernel's instructions as
    ``resources.instructions`` counts them (what ``hybrid port`` measures ports by): one figure
    for ``hybrid report``, ``hybrid port start`` and ``hybrid port status``. The PTX's where
    nvdisasm is missing."""
    found = sass_lines(fb.asm["cubin"]) if "cubin" in fb.asm else None
    return Counter(found) if found is not None else line_instructions(fb.assembly, fb.name)


def by_owner(per_line: Counter, owner) -> Counter:
    """Per-line instruction counts (``line_instructions``) summed per ``owner`` of each line."""
    counts: Counter = Counter()
    for where, n in per_line.items():
        counts[owner(where)] += n
    return counts


def _line_key(where: str) -> tuple:
    path, _, line = where.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def kernel_instructions(assembly: str, name: str) -> int:
    """Instructions in the kernel's body, counted without line info."""
    return sum(1 for line in _body(assembly, name) if _is_instruction(line))


def _body(assembly: str, name: str):
    """The stripped lines of kernel ``name``: from its entry (PTX ``.entry name``, AMDGCN label
    ``name:``) to the end of the function."""
    inside = False
    for raw in assembly.splitlines():
        line = raw.strip()
        if not inside:
            inside = re.match(rf"^(\.visible\s+)?\.entry\s+{re.escape(name)}\b", line) is not None \
                or raw.startswith(f"{name}:")
        elif line.startswith(".Lfunc_end") or raw.startswith("}"):
            return
        else:
            yield line


def _is_instruction(line: str) -> bool:
    return bool(line) and not line.startswith((".", "//", ";", "{", "}", "$")) and not line.endswith(":")


def report(fb) -> Report:
    """The data behind ``FusedBinary.report()`` (a JSON-able dict, schema version 1, that prints as a table)."""
    owner = Owners(fb.regions)
    ops = ttgir_ops(fb.asm["ttgir"], owner)
    per_line = machine_line_instructions(fb)   # none before the first line: ``unattributed``
    insts = by_owner(per_line, owner)
    figures = resources(fb.asm, fb.metadata)
    by_region = {bucket(r): [b.to_json() for b in fb.boundaries if b.region == r.index] for r in fb.regions}
    rows = [{"bucket": bucket(r), "function": r.function, "language": r.language, "call_site": str(r.call_site),
             "ttgir_ops": ops[bucket(r)], "instructions": insts[bucket(r)],
             "shared_bytes": r.shared_bytes, "boundaries": by_region[bucket(r)]} for r in fb.regions]
    rows += [{"bucket": name, "ttgir_ops": ops[name], "instructions": insts[name]}
             for name in (HOST, BOUNDARY, SHARED, NONE)]
    # Every source line that has instructions or belongs to a region: what the HTML page colours.
    lines = sorted({*filter(None, per_line), *(line for r in fb.regions for line in r.lines)}, key=_line_key)
    return Report({"schema": 1, "kernel": fb.name, "target": fb.target, "rows": rows,
                   "lines": [{"where": w, "owner": owner(w), "instructions": per_line.get(w, 0)} for w in lines],
            "totals": {"ttgir_ops": sum(ops.values()), "instructions": sum(per_line.values()),
                       "registers": figures["registers"], "spills": figures["spills"],
                       "shared_bytes": figures["shared_bytes"], "num_warps": fb.metadata.get("num_warps"),
                       "binary_bytes": figures["binary_bytes"]}})
