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


class Barriers:
    """The mbarriers of one program, keyed by their shared-memory address."""

    def __init__(self):
        self._bars: dict[tuple, MBarrier] = {}

    def init(self, key: tuple, count: int) -> None:
        with prog.program().lock:
            self._bars[key] = MBarrier(count, count, site=user_site())

    def invalidate(self, key: tuple) -> None:
        with prog.program().lock:
            self._bars.pop(key, None)

    def _get(self, key: tuple) -> MBarrier:
        bar = self._bars.get(key)
        if bar is None:
            raise InterpretError(f"mbarrier used before mbarrier.init (at {user_site()})")
        return bar

    def arrive(self, key: tuple, count: int = 1, tx_bytes: int = 0) -> None:
        p = prog.program()
        with p.lock:
            bar = self._get(key)
            bar.pending -= count
            bar.tx_bytes += tx_bytes
            bar._maybe_complete()
            _release(p, key, bar)

    def complete_tx(self, key: tuple, nbytes: int) -> None:
        """A copy tracked by the barrier (TMA) delivered ``nbytes``."""
        p = prog.program()
        with p.lock:
            bar = self._get(key)
            bar.tx_bytes -= nbytes
            bar._maybe_complete()
            _release(p, key, bar)

    def wait(self, key: tuple, phase: int) -> None:
        p = prog.program()
        me = threading.get_ident()
        site = user_site()
        with p.lock:
            bar = self._get(key)
            while bar.completed % 2 == phase:
                if p.deadlock:
                    raise DeadlockError(p.deadlock)
                p.waiting[me] = key, phase, (f"{_partition()} waits at {site} for phase {phase} of the mbarrier initialised at "
                                 f"{bar.site} (pending arrivals {bar.pending} of {bar.count}, "
                                 f"{bar.tx_bytes} transaction bytes outstanding)")
                if len(p.waiting) >= p.live:
                    p.deadlock = "deadlock: every thread of the program is blocked on an mbarrier\n  " + \
                        "\n  ".join(text for _, _, text in p.waiting.values()) + \
                        "\n  hint: an arrive (or a TMA copy / MMA commit that signals the barrier) is missing, " \
                        "or a wait uses the wrong phase"
                    p.lock.notify_all()
                    del p.waiting[me]
                    raise DeadlockError(p.deadlock)
                if not p.lock.wait(TIMEOUT_S) and bar.completed % 2 == phase:
                    raise DeadlockError(f"{p.waiting.pop(me, (None, None, site))[2]}: no progress in {TIMEOUT_S:.0f} s "
                                        f"(HYBRID_INTERPRET_TIMEOUT)")
                p.waiting.pop(me, None)
                bar = self._get(key)


def thread_exited() -> None:
    """A partition finished: fewer threads can arrive, so waiters re-check for deadlock."""
    p = prog.program()
    with p.lock:
        p.live -= 1
        p.lock.notify_all()
        if p.waiting and len(p.waiting) >= p.live and not p.deadlock:
            p.deadlock = "deadlock: the threads still running all wait on mbarriers\n  " + \
                "\n  ".join(text for _, _, text in p.waiting.values()) + "\n  hint: the partition that should arrive has returned"


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
