"""mbarriers with their documented phase semantics, and deadlock detection.

An mbarrier completes its current phase when its pending arrival count reaches zero and the
transaction bytes it expects (``mbarrier.expect``) have all been delivered (a TMA copy
delivers them). ``wait(phase)`` returns once the phase of that parity has completed. Threads
(the partitions of ``warp_specialize``) block for real on a condition variable; when every live
thread of the program is blocked, no arrival can ever come: that is reported as a deadlock
naming each waiter, instead of hanging.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from . import program as prog
from .errors import DeadlockError, InterpretError, user_site

#: a backstop for waits the detector cannot see through (seconds; HYBRID_INTERPRET_TIMEOUT)
TIMEOUT_S = float(os.environ.get("HYBRID_INTERPRET_TIMEOUT", "60"))


@dataclass
class MBarrier:
    count: int
    pending: int
    tx_bytes: int = 0
    completed: int = 0     # phases completed so far; the current phase's parity is completed % 2
    site: str = "?"

    def _maybe_complete(self) -> None:
        if self.pending <= 0 and self.tx_bytes == 0:
            self.completed += 1
            self.pending, self.tx_bytes = self.count, 0


def init(key: tuple, count: int) -> None:
    p = prog.program()
    with p.lock:
        p.mbarriers[key] = MBarrier(count, count, site=user_site())


def invalidate(key: tuple) -> None:
    p = prog.program()
    with p.lock:
        p.mbarriers.pop(key, None)


def arrive(key: tuple, count: int = 1, tx_bytes: int = 0) -> None:
    """``count`` arrivals; ``tx_bytes`` more to be delivered (``arrive.expect_tx``)."""
    _update(key, -count, tx_bytes)


def complete_tx(key: tuple, nbytes: int) -> None:
    """A copy tracked by the barrier (TMA) delivered ``nbytes``."""
    _update(key, 0, -nbytes)


def wait(key: tuple, phase: int) -> None:
    p = prog.program()
    me = threading.get_ident()
    site = user_site()
    with p.lock:
        bar = _get(p, key)
        while bar.completed % 2 == phase:
            if p.deadlock:
                raise DeadlockError(p.deadlock)
            p.waiting[me] = key, phase, (
                f"{_partition()} waits at {site} for phase {phase} of the mbarrier initialised at {bar.site} "
                f"(pending arrivals {bar.pending} of {bar.count}, {bar.tx_bytes} transaction bytes outstanding)")
            if len(p.waiting) >= p.live:
                message = _declare_deadlock(p, "every thread of the program is blocked on an mbarrier",
                                            hint="an arrive (or a TMA copy / MMA commit that signals the barrier) is "
                                                 "missing, or a wait uses the wrong phase")
                del p.waiting[me]
                raise DeadlockError(message)
            if not p.lock.wait(TIMEOUT_S) and bar.completed % 2 == phase:
                raise DeadlockError(f"{p.waiting.pop(me, (None, None, site))[2]}: no progress in {TIMEOUT_S:.0f} s "
                                    f"(HYBRID_INTERPRET_TIMEOUT)")
            p.waiting.pop(me, None)
            bar = _get(p, key)


def thread_exited() -> None:
    """A partition finished: fewer threads can arrive, so waiters re-check for deadlock."""
    p = prog.program()
    with p.lock:
        p.live -= 1
        if p.waiting and len(p.waiting) >= p.live and not p.deadlock:
            _declare_deadlock(p, "the threads still running all wait on mbarriers",
                              hint="the partition that should arrive has returned")
        p.lock.notify_all()


def _get(p, key: tuple) -> MBarrier:
    bar = p.mbarriers.get(key)
    if bar is None:
        raise InterpretError(f"mbarrier used before mbarrier.init (at {user_site()})")
    return bar


def _update(key: tuple, arrivals: int, tx_bytes: int) -> None:
    p = prog.program()
    with p.lock:
        bar = _get(p, key)
        bar.pending += arrivals
        bar.tx_bytes += tx_bytes
        bar._maybe_complete()
        _release(p, key, bar)


def _declare_deadlock(p, what: str, hint: str) -> str:
    """Record (and return) the report every waiter raises: each blocked thread, where, on what."""
    waiters = "\n  ".join(text for _, _, text in p.waiting.values())
    p.deadlock = f"deadlock: {what}\n  {waiters}\n  hint: {hint}"
    p.lock.notify_all()
    return p.deadlock


def _release(p, key: tuple, bar: MBarrier) -> None:
    """Waiters of ``bar`` whose phase has completed are no longer blocked, even before they run
    again: without this, a woken thread that has not yet been scheduled would count as blocked."""
    for thread, (k, phase, _) in list(p.waiting.items()):
        if k == key and bar.completed % 2 != phase:
            del p.waiting[thread]
    p.lock.notify_all()


def _partition() -> str:
    frames = prog.frames()
    return frames[-1].partition if frames else "?"
