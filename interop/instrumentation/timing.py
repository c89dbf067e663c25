"""Where a compile's time goes: wall time per stage, recorded while a block runs.

``recording()`` opens a ``Timing`` for the block; ``stage(name)`` brackets work inside it.
Stages nest, and each stage is charged only its own time (a region lowered during the host's
code generation is charged to region lowering, not to the host), so the stages of a compile
add up to its total. Triton's own stages after ``make_ir`` (``ttir``, ``ttgir``, ``llir``, ``ptx``,
``cubin``, ...) come from Triton's compilation listener, less what stages of this project ran
inside them (``inside_triton``: a Triton host's Gluon regions are finished in its ``ttgir``
stage). Outside ``recording()`` a stage costs one lookup.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from dataclasses import dataclass, field
from typing import Iterator

import triton

#: what no stage accounts for: Triton's setup, cache key and cache writes, the front end's glue
OTHER = "other (Triton's setup and cache, first-use loading)"
TRITON = "triton "          # prefix of the stages Triton's listener reports


@dataclass
class Timing:
    """Seconds and calls per stage of one compile (or of several, ``merge``d), and cache hits."""
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)   # per cache: lookups it served
    total: float = 0.0
    _open: list = field(default_factory=list, repr=False)   # [name, start of its current slice]
    _inside: dict[str, float] = field(default_factory=dict, repr=False)   # Triton stage -> our stages' time in it

    def add(self, name: str, seconds: float, calls: int = 1) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.calls[name] = self.calls.get(name, 0) + calls

    def hit(self, cache: str) -> None:
        self.hits[cache] = self.hits.get(cache, 0) + 1

    def merge(self, other: "Timing") -> None:
        for name, seconds in other.seconds.items():
            self.add(name, seconds, other.calls.get(name, 0))
        for cache, n in other.hits.items():
            self.hits[cache] = self.hits.get(cache, 0) + n
        self.total += other.total

    def rows(self) -> list[tuple[str, float, int]]:
        """(stage, seconds, calls), costliest first, with what no stage accounts for as ``OTHER``."""
        rows = sorted(((n, s, self.calls.get(n, 0)) for n, s in self.seconds.items()), key=lambda r: -r[1])
        rest = self.total - sum(self.seconds.values())
        return rows + ([(OTHER, rest, 0)] if rest > 0 else [])

    def to_json(self) -> dict:
        return {"total_s": self.total, "stages": [{"stage": n, "seconds": s, "calls": c} for n, s, c in self.rows()],
                "cache_hits": dict(self.hits)}

    def _enter(self, name: str) -> None:
        now = time.perf_counter()
        if self._open:   # pause the enclosing stage
            parent = self._open[-1]
            self.add(parent[0], now - parent[1], 0)
        self._open.append([name, now])

    def _exit(self) -> None:
        now = time.perf_counter()
        name, start = self._open.pop()
        self.add(name, now - start)
        if self._open:
            self._open[-1][1] = now


_active: contextvars.ContextVar[Timing | None] = contextvars.ContextVar("hybrid_timing", default=None)


def current() -> Timing | None:
    return _active.get()


@contextlib.contextmanager
def recording() -> Iterator[Timing]:
    """Record the stages of the compiles in this block into a fresh ``Timing``."""
    timing = Timing()
    token = _active.set(timing)
    previous = triton.knobs.compilation.listener

    def listener(**kwargs):   # Triton's stages after make_ir, then whoever listened before
        times = kwargs["times"]
        if kwargs.get("cache_hit"):
            timing.hit("triton")
        for name, microseconds in times.lowering_stages:
            timing.add(TRITON + name, microseconds / 1e6 - timing._inside.pop(name, 0.0))
        if previous is not None:
            previous(**kwargs)

    triton.knobs.compilation.listener = listener
    start = time.perf_counter()
    try:
        yield timing
    finally:
        timing.total += time.perf_counter() - start
        triton.knobs.compilation.listener = previous
        _active.reset(token)


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Charge the block's own time (less that of the stages inside it) to ``name``."""
    timing = _active.get()
    if timing is None:
        yield
        return
    timing._enter(name)
    try:
        yield
    finally:
        timing._exit()


@contextlib.contextmanager
def inside_triton(stage_name: str) -> Iterator[None]:
    """The block runs inside Triton's stage ``stage_name``: Triton's listener reports that stage's
    time whole, so the time the stages opened in the block charge is deducted from it."""
    timing = _active.get()
    if timing is None:
        yield
        return
    before = sum(timing.seconds.values())
    try:
        yield
    finally:
        timing._inside[stage_name] = timing._inside.get(stage_name, 0.0) + sum(timing.seconds.values()) - before


def timed(name: str):
    """Decorator: every call of the function is a ``stage(name)``."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with stage(name):
                return fn(*args, **kwargs)
        return wrapper
    return decorate


def hit(cache: str) -> None:
    """Count a lookup ``cache`` served, in the active recording."""
    timing = _active.get()
    if timing is not None:
        timing.hit(cache)
