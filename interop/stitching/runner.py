"""The one runner of the compile's passes (``interop.pipeline``'s lists).

What every pass needs and none writes by hand: the pass is timed (its ``stage`` in
``instrumentation.timing``), the module verified after it unless it reports that it changed
nothing (returns False; True or None verify), and once more at the end of the list if the last
pass run was not verified, so that nothing unverified reaches Gluon's pipeline; a failure raised
as a ``RegionError`` naming the pass (or the unverified ones before the end) and the regions; and
after the pass that removes the last boundary marker none may be left (``stitch.check_no_markers``). ``HYBRID_DUMP_AFTER=<pass>[,<pass>...]``
(or ``all``) prints the module after each named pass to stderr, or writes it to
``$HYBRID_DUMP_DIR/<kernel>.<NN>.<pass>.mlir`` (``NN``: the pass's place in its list), as
Triton's ``MLIR_ENABLE_DUMP`` does for its own passes.

Observers (``observing``) see the module before or after one pass of every compile run in their
block on this thread: what the port tool records is read there, not kept in module globals.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import LayoutError, RegionError, SharedMemoryError
from ..instrumentation import timing
from . import stitch
from ..ir.verify import verify
from ..triton.frontend import CompilationError
from .state import Stitch

DUMP_AFTER = "HYBRID_DUMP_AFTER"
DUMP_DIR = "HYBRID_DUMP_DIR"


@dataclass(frozen=True)
class Pass:
    """One job on the module, ``run(state, module)``: whether it changed the module (None: not
    said); skipped where ``when(state)`` is false."""
    name: str
    run: Callable[[Stitch, object], bool | None]
    stage: str = "stitching"                            # the timing stage it is charged to
    when: Callable[[Stitch], bool] | None = None
    markers_gone: bool = False                          # after it no boundary marker may be left


@dataclass(frozen=True)
class Observer:
    """``see(state, module)`` before (or after) each run of the pass whose function is ``at``."""
    at: Callable
    see: Callable[[Stitch, object], None]
    before: bool = False


_observers: contextvars.ContextVar[tuple[Observer, ...]] = contextvars.ContextVar("hybrid_observers", default=())


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """``observer`` sees the passes of the compiles run in this block (this thread's only)."""
    token = _observers.set(_observers.get() + (observer, ))
    try:
        yield
    finally:
        _observers.reset(token)


def run(passes: list[Pass], state: Stitch, module) -> None:
    """Each of ``passes`` on ``module`` in order, checked, timed and dumped as the module says."""
    dumped = _dump_request()
    unverified: list[str] = []    # the passes run since the last verify, each said it changed nothing
    for position, step in enumerate(passes):
        if step.when is not None and not step.when(state):
            continue
        _notify(step, state, module, before=True)
        with timing.stage(step.stage), _named(state, f"the pass '{step.name}'"):
            if step.run(state, module) is False:
                unverified.append(step.name)
            else:
                verify(module, f"the pass '{step.name}'" + (f" (or {_listed(unverified)} before it, which "
                                                             "reported no change)" if unverified else ""))
                unverified.clear()
            if step.markers_gone:
                stitch.check_no_markers(module)
        _notify(step, state, module, before=False)
        if dumped is not None and (dumped == "all" or step.name in dumped):
            _dump(step.name, position, module)
    if unverified:   # the end of the list: the passes since the last verify, named
        with timing.stage("stitching"), _named(state, "the last verify"):
            verify(module, f"{_listed(unverified)}, which reported no change")


def _listed(names: list[str]) -> str:
    return ("the pass " if len(names) == 1 else "the passes ") + ", ".join(f"'{name}'" for name in names)


@contextlib.contextmanager
def _named(state: Stitch, what: str) -> Iterator[None]:
    """A failure in the block raised as a ``RegionError`` naming ``what`` failed and the regions."""
    try:
        yield
    except (RuntimeError, ValueError) as exc:
        if not _wrapped(exc):
            raise
        names = ", ".join(r.function for r in state.regions) or "?"
        site = str(state.regions[0].call_site) if state.regions else "?"
        raise RegionError(names, site, f"{what} failed: {exc}") from exc


def _wrapped(exc: Exception) -> bool:
    """MLIR's failures (a pass manager's, a verify's), the stitcher's and the planner's; the errors
    written for the kernel's author (``RegionError``, ``TargetError``, ``LayoutError``, ...) already
    say what and where."""
    return not isinstance(exc, (CompilationError, LayoutError, SharedMemoryError))


def _notify(step: Pass, state: Stitch, module, before: bool) -> None:
    for observer in _observers.get():
        if observer.at is step.run and observer.before == before:
            observer.see(state, module)


def _dump_request() -> str | set[str] | None:
    """``HYBRID_DUMP_AFTER``: ``"all"``, the set of pass names given, or None."""
    names = {name.strip() for name in os.environ.get(DUMP_AFTER, "").split(",") if name.strip()}
    return "all" if "all" in names else (names or None)


def _dump(name: str, position: int, module) -> None:
    text = f"// -----// IR Dump After {name} //----- //\n{module}\n"
    folder = os.environ.get(DUMP_DIR)
    if not folder:
        sys.stderr.write(text)
        return
    kernel = module.get_entry_func_name()
    path = Path(folder) / f"{kernel}.{position:02d}.{re.sub(r'[^A-Za-z0-9]+', '_', name)}.mlir"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
