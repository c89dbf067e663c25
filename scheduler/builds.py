"""Run build jobs on any ``concurrent.futures.Executor``; one job's failure stops no other.

The calling process resolves each job, computes its cache key and serves cache hits itself, so a
warm build starts no worker. Only misses go to the executor: by default a process pool (one
worker per core) forked from a server that has Triton and the project loaded; ``InlineExecutor``
builds in-process; a cluster's executor (Dask: ``distributed.Client(...).get_executor()``)
spreads builds over machines. Workers receive a
``Job`` (plain data) and the front end's compile function (``hybrid.compile``, pickled by name:
the scheduler sits below the front end and never imports it) and return plain data (JSON record
and binary bytes); the caller writes the cache, so workers need no shared filesystem for it.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import multiprocessing
import os
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Any, Callable

from interop import caches
from interop.errors import RegionError
from interop.setting import BuildSettings
from interop.triton import compat

from .cache import Cache, CorruptEntry, Entry, job_key
from .planning import Job, resolve
from .resources import launch_info


@dataclass
class BuildResult:
    job: Job
    key: str | None
    entry: Entry | None
    status: str            # "cached", "built", "rebuilt" (a damaged cache entry was replaced) or "failed"
    seconds: float         # compile time in the worker, or the cache lookup
    error: str | None = None
    region: str | None = None   # for a failed region: "function at file:line"
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def summary(self) -> dict | None:
        return self.entry.record["summary"] if self.entry else None


class InlineExecutor(Executor):
    """Runs each job in the calling process when submitted: serial builds, debugging, tests."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


#: builds one kernel for one target: ``hybrid.compile``'s signature, returning a ``FusedBinary``
CompileKernel = Callable[..., Any]


def compile_job(job: Job, compile_kernel: CompileKernel, cache_root: str | None = None) -> dict:
    """Worker side: ``{"record", "binary", "seconds"}``, or ``{"error", "region"}``; never raises.
    The region cache lives under ``cache_root`` (the job cache's root) where given."""
    start = time.perf_counter()
    try:
        with caches.using_root(cache_root):
            return _compile(job, compile_kernel, start)
    except Exception as exc:   # reported per job, with the kernel, target and region
        return {**failure(job, exc), "seconds": time.perf_counter() - start}
    finally:
        gc.collect()   # Triton's code generators are IR-holding cycles; free them between jobs


def _compile(job: Job, compile_kernel: CompileKernel, start: float) -> dict:
    spec = resolve(job)
    # a job's build settings are its options or the defaults, never the caller's enclosing blocks (its cache key)
    fb = compile_kernel(spec.fn, spec.signature, spec.constexprs, target=job.target,
                        **{**asdict(BuildSettings()), **spec.options})
    record = {"kernel": fb.name, "ref": job.kernel, "target": job.target,
              "sha256": hashlib.sha256(fb.binary).hexdigest(), "params": spec.params,
              "constexprs": spec.constexprs_json, "options": spec.options, "config": spec.config_json,
              "triton_version": compat.TRITON_VERSION, "launch": launch_info(fb, len(spec.signature)).to_json(),
              "summary": fb.summary()}
    return {"record": record, "binary": fb.binary, "seconds": time.perf_counter() - start}


def failure(job: Job, exc: BaseException) -> dict:
    region = f"{exc.function} at {exc.call_site}" if isinstance(exc, RegionError) else None
    return {"error": f"{job.label}: {type(exc).__name__}: {exc}", "region": region}


def build(jobs: list[Job], compile_kernel: CompileKernel, cache: Cache | None = None, executor: Executor | None = None,
          max_workers: int | None = None, on_result: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
    """Build ``jobs`` with ``compile_kernel`` (``hybrid.compile``); results in job order.
    ``on_result`` sees each result as it is known."""
    results: dict[int, BuildResult] = {}
    waiting: dict[str, list[int]] = {}     # key -> jobs that need this build (identical jobs build once)
    notes: dict[int, str] = {}

    def finish(index: int, result: BuildResult) -> None:
        results[index] = result
        if on_result:
            on_result(result)

    for i, job in enumerate(jobs):
        start = time.perf_counter()
        try:
            key = job_key(resolve(job))
            entry = cache.get(key) if cache else None
        except CorruptEntry as exc:
            entry, notes[i] = None, f"damaged cache entry replaced ({exc})"
        except Exception as exc:
            finish(i, BuildResult(job, None, None, "failed", time.perf_counter() - start, **failure(job, exc)))
            continue
        if entry is not None:
            finish(i, BuildResult(job, key, entry, "cached", time.perf_counter() - start))
        else:
            waiting.setdefault(key, []).append(i)
    if waiting:
        with _executor(executor, max_workers, len(waiting), compile_kernel) as pool:
            root = str(cache.root) if cache else None
            futures = {pool.submit(compile_job, jobs[indices[0]], compile_kernel, root): key
                       for key, indices in waiting.items()}
            for future in as_completed(futures):
                key = futures[future]
                out = _outcome(future, jobs[waiting[key][0]])
                entry = Entry(key, out["record"], out["binary"]) if "record" in out else None
                unsaved = _put(cache, entry) if entry and cache else ""
                for i in waiting[key]:
                    status = "failed" if entry is None else "rebuilt" if i in notes else "built"
                    note = "; ".join(n for n in (notes.get(i, ""), unsaved) if n)
                    finish(i, BuildResult(jobs[i], key, entry, status, out.get("seconds", 0.0), out.get("error"),
                                          out.get("region"), note))
    return [results[i] for i in range(len(jobs))]


def _put(cache: Cache, entry: Entry) -> str:
    """Keep ``entry``; a cache that cannot take it (disk full, read-only) costs the next build a
    rebuild, never this build its binary: the note says why it was not kept."""
    try:
        cache.put(entry)
    except OSError as exc:
        return f"not kept in the cache at {cache.root} ({exc.strerror or exc}); the next build compiles it again"
    return ""


def _outcome(future: Future, job: Job) -> dict:
    try:
        return future.result()
    except Exception as exc:   # the worker itself died (or the executor failed to run it)
        return failure(job, exc)


def _executor(executor: Executor | None, max_workers: int | None, jobs: int, compile_kernel: CompileKernel):
    if executor is not None:
        return contextlib.nullcontext(executor)   # the caller's to shut down
    workers = min(max_workers or os.cpu_count() or 1, jobs)
    return ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context(compile_kernel.__module__))


def _worker_context(compiler_module: str):
    """Workers fork from a server that has already imported Triton and the compiler, so a pool
    starts in milliseconds instead of paying the imports per worker and per build. Where there
    is no forkserver (Windows, macOS default), plain spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["triton", "triton.compiler", compiler_module, "scheduler.builds"])
    return context
