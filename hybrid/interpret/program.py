"""One program (CTA) being interpreted, and the thread-local view of who runs what.

Every Python thread that executes kernel code has a stack of ``Frame``s: the language of the
function it is in (which decides the semantic the ``tl``/``gl`` builtins use, exactly as the
code generator of that function would) and the warps it runs on (``gl.num_warps()`` and
layout checks of ``warp_specialize`` workers).
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Iterator


@dataclass(frozen=True)
class Frame:
    language: str          # "triton" or "gluon"
    semantic: object       # the TritonSemantic / GluonSemantic the builtins of this function use
    num_warps: int
    partition: str         # "default partition (fn)", "worker partition <i> (fn)": for deadlock reports
    region: str | None = None   # the Triton region this code runs in ("'t_scale' called at file:line"), if any


@dataclass
class Program:
    """What all threads of one program share: the target, its mbarriers and the live-thread
    bookkeeping. One per program of the grid, so nothing carries over between programs."""
    target: str
    warp_size: int
    num_warps: int
    lock: threading.Condition = field(default_factory=threading.Condition)
    live: int = 1                                   # threads of this program still running
    mbarriers: dict = field(default_factory=dict)   # shared-memory address -> barriers.MBarrier
    waiting: dict = field(default_factory=dict)     # thread id -> (mbarrier address, phase, report line)
    deadlock: str | None = None
    storages: object = None                         # bounds.Storages: what global-memory accesses may reach
    shared: object = None                           # memory.SharedBudget: the shared memory it holds


_local = threading.local()
_program: Program | None = None


def current_frame() -> Frame:
    stack = getattr(_local, "frames", None)
    if not stack:
        raise RuntimeError("no kernel is being interpreted on this thread")
    return stack[-1]


def program() -> Program:
    if _program is None:
        raise RuntimeError("no kernel is being interpreted")
    return _program


@contextlib.contextmanager
def running(prog: Program) -> Iterator[Program]:
    global _program
    previous, _program = _program, prog
    try:
        yield prog
    finally:
        _program = previous


@contextlib.contextmanager
def frame(f: Frame) -> Iterator[Frame]:
    stack = _local.__dict__.setdefault("frames", [])
    stack.append(f)
    try:
        yield f
    finally:
        stack.pop()


def thread_frames(frames: list[Frame]) -> None:
    """Seed a new thread (a ``warp_specialize`` worker) with its frame stack."""
    _local.frames = list(frames)


def frames() -> list[Frame]:
    return list(getattr(_local, "frames", []))
