"""The one codec of a compile's records: its regions and boundaries travel in the module.

A cached binary is served by Triton without running ``make_ir``, so the records a compile made
must come back from what Triton keeps: ``encode`` stores them on the stitched module as one
string attribute (``ATTR``, JSON), which stays in the ttgir Triton caches with the binary, and
``decode`` reads them back, typed, from a module's printed text (``asm["ttgir"]``,
``stitched_ir``). Their JSON is the records' own ``to_json``, as reports and bundles write it.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import PurePath

from .boundary import Boundary
from .region import CallSite, Region

ATTR = "hybrid.records"
_PRINTED = re.compile(re.escape(ATTR) + r' = "((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(\\|[0-9A-Fa-f]{2})")   # MLIR prints "\\" for a backslash, "\XX" for other bytes


@dataclass(frozen=True)
class Records:
    regions: tuple[Region, ...] = ()
    boundaries: tuple[Boundary, ...] = ()


def encode(module, builder, regions: list[Region], boundaries: list[Boundary]) -> None:
    """Store the records on ``module`` (nothing for a kernel without regions)."""
    if regions:
        text = json.dumps({"regions": [r.to_json() for r in regions], "boundaries": [b.to_json() for b in boundaries]})
        module.set_attr(ATTR, builder.get_string_attr(text))


def decode(module_text: str) -> Records:
    """The records stored on a printed module (none where it has none)."""
    match = _PRINTED.search(module_text)
    if match is None:
        return Records()
    raw = _ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)), match.group(1))
    data = json.loads(raw.encode("latin-1").decode("utf-8"))
    return Records(tuple(Region.from_json(r) for r in data["regions"]),
                   tuple(Boundary.from_json(b) for b in data["boundaries"]))


def reanchored(found: Records, files) -> Records:
    """``found`` with each call site in one of ``files`` (the compile's own source files).
    Triton's cache is keyed by source, not by path, so a binary first built in another checkout
    comes back with that checkout's paths: a call site's file that is not among ``files`` becomes
    the one of them that shares the longest path suffix with it (its name at least)."""
    files = [str(f) for f in files]

    def anchored(site: CallSite) -> CallSite:
        if site.file in files:
            return site
        old = PurePath(site.file).parts[::-1]
        best = max(files, key=lambda f: _common_prefix(PurePath(f).parts[::-1], old), default=None)
        if best is None or _common_prefix(PurePath(best).parts[::-1], old) == 0:
            return site
        return CallSite(best, site.line)

    return Records(tuple(dataclasses.replace(r, call_site=anchored(r.call_site)) for r in found.regions),
                   found.boundaries)


def _common_prefix(a: tuple, b: tuple) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
