"""Build (kernel, target) jobs in parallel worker processes; one job's failure stops no other.

A job names a module with a ``build(target) -> FusedBinary`` function, so workers import the
kernel themselves: nothing but the job's names crosses the process boundary, and results come
back as JSON-able summaries.
"""
from __future__ import annotations

import importlib
import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass


@dataclass(frozen=True)
class BuildJob:
    module: str   # importable module exposing build(target)
    target: str


@dataclass
class BuildResult:
    job: BuildJob
    summary: dict | None
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


def run_job(job: BuildJob) -> BuildResult:
    start = time.perf_counter()
    try:
        summary = importlib.import_module(job.module).build(job.target).summary()
        return BuildResult(job, summary, None, time.perf_counter() - start)
    except Exception as exc:  # reported per job, with the kernel and target, never raised
        return BuildResult(job, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)


def build_all(jobs: list[BuildJob], executor: Executor | None = None, max_workers: int | None = None) -> list[BuildResult]:
    """Run ``jobs`` on ``executor`` (default: a process pool with one worker per core)."""
    if executor is None:
        workers = max_workers or os.cpu_count() or 1
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(run_job, jobs))
    return list(executor.map(run_job, jobs))
