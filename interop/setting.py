"""The build settings of a compile: one frozen record, passed explicitly through it.

``hybrid.compile`` takes them as arguments and hands them to the source it compiles; the
compile context reads them from there. A launch through Triton's JIT has no arguments for them, so
its source takes ``current()``: the defaults where the launch happens, set by the enclosing
blocks (``hybrid.boundary_mode(...)``, ``instrument.forced()``, ``hybrid.profile.profiling()``,
all through ``using``), with regions instrumented while Proton's instrumentation mode is on.
Blocks are defaults, uniformly: an argument given to ``hybrid.compile`` wins over them.

``BuildSettings.key`` is part of every cache key whose entries depend on the settings: the
source's hash (so Triton's in-memory and on-disk caches) and the JIT's kernel caches.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, fields, replace
from typing import Iterator

from .triton import compat

BOUNDARY_MODES = ("auto", "convert", "shared")
LOOP_TIMINGS = ("total", "iteration")


@dataclass(frozen=True)
class BuildSettings:
    boundaries: str = "auto"   # how boundary conversions are planned: one of BOUNDARY_MODES (``planner``)
    instrument_regions: bool = False   # Proton scopes per region and for the kernel (``instrument``)
    loops: str = "total"       # a region in a pipelined loop is timed per loop or per iteration: LOOP_TIMINGS

    def __post_init__(self) -> None:
        for name, choices in (("boundaries", BOUNDARY_MODES), ("instrument_regions", (False, True)), ("loops", LOOP_TIMINGS)):
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"{name}={value!r}: expected one of {', '.join(map(str, choices))}")

    @property
    def key(self) -> str:
        """What a build's IR depends on among the settings, for cache keys."""
        return f"{self.boundaries}-{f'proton-{self.loops}' if self.instrument_regions else 'plain'}"


_defaults: contextvars.ContextVar[BuildSettings] = contextvars.ContextVar("hybrid_build_settings",
                                                                         default=BuildSettings())


def current() -> BuildSettings:
    """The settings a compile given none gets here: the enclosing blocks', and instrumented
    regions while Proton's instrumentation mode is on (it lowers the records)."""
    found = _defaults.get()
    if not found.instrument_regions and compat.proton_instrumenting():
        return replace(found, instrument_regions=True)
    return found


def resolve(**given) -> BuildSettings:
    """``current()`` with the fields given (not None) in its place: explicit arguments win."""
    unknown = set(given) - {f.name for f in fields(BuildSettings)}
    if unknown:
        raise TypeError(f"not a build setting: {', '.join(sorted(unknown))}")
    return replace(current(), **{name: value for name, value in given.items() if value is not None})


@contextlib.contextmanager
def using(**changes) -> Iterator[BuildSettings]:
    """Compiles given no settings in this block (JIT launches) take ``changes`` (fields of
    ``BuildSettings``, None for "as around the block")."""
    settings = replace(_defaults.get(), **{name: value for name, value in changes.items() if value is not None})
    token = _defaults.set(settings)
    try:
        yield settings
    finally:
        _defaults.reset(token)


def boundary_mode(way: str) -> contextlib.AbstractContextManager:
    """Plan boundaries with ``way`` (one of ``BOUNDARY_MODES``) in compiles given no mode in this
    block (``hybrid.boundary_mode``); ``hybrid.compile(..., boundaries=...)`` wins over it."""
    return using(boundaries=way)
