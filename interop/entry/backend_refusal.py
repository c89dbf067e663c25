"""A backend stage's refusal, said with the source line, the region and what to do.

After ``ttgir`` the module has verified, yet Triton's ``llir`` stage can still refuse an op for
facts only known from the specialization: a ``cp.async`` (Gluon's ``async_copy``) of fewer than
4 bytes, because the pointers' alignment comes from integer arguments the launch did not
specialize as multiples of 16. Upstream raises ``PassManager::run failed`` and leaves MLIR's
diagnostics on stderr. Here the stage is replayed, on the failure path only, on the module
Triton cached after ``ttgir``, with stderr captured (``diagnostics.capture``); the first error
becomes a ``BackendError`` (a ``RuntimeError``, as upstream's) that quotes the source line and
names the region holding it (or the host kernel), the backend's words and, for a refusal with a
known cause, what to do.
"""
from __future__ import annotations

import contextlib
import linecache
import re
from typing import Callable

from .. import records
from ..ir import diagnostics
from ..triton import compat
from ..triton.bindings import ir, parse_module

_ERROR = re.compile(r"^(\S+?):(\d+):(\d+): error: (.*)$", re.MULTILINE)
_CALLED_FROM = re.compile(r"^(\S+?):(\d+):\d+: note: called from$", re.MULTILINE)

#: Refusals with a known cause: the backend's words -> what the author can do ({integers}: the
#: kernel's integer arguments not specialized as multiples of 16).
HINTS = (
    (re.compile(r"cp\.async does not support transfers smaller than 4 bytes"),
     "the copy's pointers are aligned to fewer than 4 bytes as far as the compiler knows; the kernel's integer "
     "arguments not known to be multiples of 16 are: {integers} (Triton's JIT specializes one that is at launch; "
     "hybrid.compile, those named in divisible=). Launch with strides and sizes that are (pad the rows), or copy "
     "with gl.load and a shared-memory store where they cannot be"),
)


class BackendError(RuntimeError):
    """Triton's backend refused the stitched kernel after it verified."""


def guarded(stage: Callable, backend, name: str) -> Callable:
    """``stage`` (a backend stage after ``ttgir``), raising ``BackendError`` where it fails."""

    def run(module, metadata: dict):
        try:
            return stage(module, metadata)
        except RuntimeError as exc:
            text = _cached_ttgir(metadata)
            said = _replayed(stage, backend, text, metadata) if text else ""
            raise BackendError(explain(name, said, text or "")) from exc

    return run


def explain(stage: str, said: str, ttgir: str) -> str:
    """The error for MLIR's diagnostics ``said`` of ``stage`` on the kernel of ``ttgir`` (its text)."""
    signature = _signature(ttgir)
    entry = re.match(r"tt\.func public @([\w$.]+)", signature)
    kernel = entry.group(1) if entry else "the kernel"
    found = _ERROR.search(said)
    if found is None:
        return (f"kernel '{kernel}': Triton's {stage} stage failed after the kernel verified "
                f"(MLIR's diagnostics, if any, are above on stderr)")
    file, line, column, words = found.group(1), int(found.group(2)), found.group(3), found.group(4)
    where = f"{file}:{line}:{column}"
    source = linecache.getline(file, line).strip()
    caller = _CALLED_FROM.search(said, found.end())
    region = next((r for r in records.decode(ttgir).regions if f"{file}:{line}" in r.lines), None)
    owner = (f"region '{region.function}' ({region.language}) called at {region.call_site}" if region
             else f"kernel '{kernel}'")
    message = (f"{owner}: Triton's {stage} stage refused {where}"
               + (f" (called from {caller.group(1)}:{caller.group(2)})" if caller else "") + f": {words}"
               + (f"\n    {source}" if source else ""))
    hint = next((h for pattern, h in HINTS if pattern.search(words)), None)
    integers = ", ".join(re.findall(r"%(\w+): i(?:32|64) (?!\{tt\.divisibility)", signature)) or "none"
    return message + (f"\n  hint: {hint.format(integers=integers)}" if hint else "")


def _signature(ttgir: str) -> str:
    found = re.search(r"tt\.func public @.*", ttgir)
    return found.group(0) if found else ""


def _cached_ttgir(metadata: dict) -> str | None:
    """The ``ttgir`` Triton cached for this compile (keyed by ``metadata["hash"]``), if kept."""
    found = compat.cached_files(metadata.get("hash", ""), ".ttgir")
    if len(found) != 1:
        return None
    with open(found[0], encoding="utf-8") as f:
        return f.read()


def _replayed(stage: Callable, backend, text: str, metadata: dict) -> str:
    """What the stage prints to stderr (its diagnostics, notes too), run again on ``text`` parsed
    in a fresh context."""
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = parse_module(text, context)
    with diagnostics.capture(echo=False) as said, contextlib.suppress(Exception):
        stage(module, dict(metadata))
    return said.text
