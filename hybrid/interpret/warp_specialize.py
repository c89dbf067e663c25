"""``gl.warp_specialize`` as cooperating threads: the default partition on the calling thread,
each worker partition on its own, synchronised only through mbarriers (``barriers.py``)."""
from __future__ import annotations

import threading

from . import barriers, numerics
from . import program as prog
from .errors import DeadlockError


def run(call, functions_and_args, worker_num_warps) -> object:
    """``call(fn, args, num_warps, partition)`` runs one partition; returns the default's result."""
    (default_fn, default_args), workers = functions_and_args[0], functions_and_args[1:]
    p = prog.program()
    frames = prog.frames()
    errors: list[BaseException] = []
    with p.lock:
        p.live += len(workers)

    def worker(i, fn, args, num_warps):
        prog.thread_frames(frames)
        try:
            with numerics.quiet():   # (a new thread starts with numpy's default settings)
                call(fn, args, num_warps, f"worker partition {i} ({fn.__name__})")
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            errors.append(exc)
        finally:
            barriers.thread_exited()

    threads = [threading.Thread(target=worker, args=(i, fn, args, int(nw)), daemon=True)
               for i, ((fn, args), nw) in enumerate(zip(workers, worker_num_warps))]
    for t in threads:
        t.start()
    result = None
    try:
        result = call(default_fn, default_args, prog.current_frame().num_warps,
                      f"default partition ({default_fn.__name__})")
    except BaseException as exc:  # noqa: BLE001
        errors.insert(0, exc)
    finally:
        barriers.thread_exited()          # while it joins, this thread can arrive on nothing
    for t in threads:
        t.join()
    with p.lock:
        p.live += 1
    if errors:   # a partition's own error explains the deadlock it caused in the others
        raise next((e for e in errors if not isinstance(e, DeadlockError)), errors[0])
    return result
