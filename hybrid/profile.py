"""Per-region cycles of mixed kernels on a GPU, from Proton's intra-kernel instrumentation.

``profiling()`` runs a block under Proton's instrumentation backend: hybrid kernels launched in
it are built with a Proton scope per region instance and one around the kernel
(``interop.instrumentation.instrument``), Proton's runtime collects each warp's records, and Proton writes its
Chrome trace (per CTA and warp lanes, for Perfetto). ``analyze()`` turns that trace into
per-region figures: for every warp of every CTA of every launch, the cycles each scope took
(summed over its calls: a region in a loop is called once per iteration), the kernel's cycles,
and what is left for the host; then the median and p90 over those warps and each scope's
share of its warp's kernel time.

Proton's trace gives each scope event as ``name`` (the scope), ``pid`` ``"<kernel> Core<sm>
CTA<cta>"``, ``tid`` ``"warp <w> (line <l>)"`` and ``dur`` in microseconds at an assumed 1 GHz,
i.e. cycles / 1000 (Triton 3.6 through 3.9 write it so).
"""
from __future__ import annotations

import bisect
import contextlib
import json
import math
import re
import statistics
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from interop.instrumentation import instrument

from interop import setting

SCHEMA = 1
_PID = re.compile(r"^(?P<kernel>.*) Core(?P<core>\d+) CTA(?P<cta>\d+)$")
_TID = re.compile(r"^warp (?P<warp>\d+)")
_LOOP = re.compile(r"^loop\d+\[(?P<regions>[r\d,]*)\]$")
_REGION = re.compile(r"^r(?P<index>\d+):(?P<function>.+)$")


@dataclass(frozen=True, slots=True)
class Event:
    """One scope instance on one warp, in cycles from that CTA's first record."""
    kernel: str
    cta: int
    warp: int
    scope: str
    start: int
    cycles: int

    @property
    def end(self) -> int:
        return self.start + self.cycles


@dataclass
class Figures:
    median: float
    p90: float

    @classmethod
    def of(cls, values: list[float]) -> "Figures":
        ordered = sorted(values)
        return cls(statistics.median(ordered), ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)])


@dataclass
class ScopeProfile:
    """One scope of a kernel: a region, a pipelined loop timed whole, the kernel, or the host (the
    kernel's cycles outside every outermost scope)."""
    scope: str
    kind: str                 # "kernel" | "region" | "loop" | "host"
    regions: list[int]        # the regions it times
    calls: float              # calls per warp (median): iterations for a region in a loop
    cycles: Figures           # per warp, all calls together
    per_call: Figures
    share: float              # of its warp's kernel cycles (median over warps)


@dataclass
class KernelProfile:
    kernel: str
    warps: int                # warp instances measured: warps x CTAs x launches
    scopes: list[ScopeProfile] = field(default_factory=list)

    def scope(self, name: str) -> ScopeProfile:
        return next(s for s in self.scopes if s.scope == name)


class TraceError(ValueError):
    """A file that is not a Proton Chrome trace."""


class TraceWarning(UserWarning):
    """A trace whose figures are less than they seem: launches on one warp lane that overlap."""


def read_trace(path: str | Path) -> list[Event]:
    """The scope events of a Proton instrumentation trace (other lanes and flow markers skipped);
    ``TraceError`` naming the file for anything else, a negative or non-finite time included.
    Each event becomes an ``Event`` as the JSON is parsed, so a large trace never holds all its
    dictionaries at once."""
    lanes = _LaneNames()
    try:
        data = json.loads(Path(path).read_bytes(), object_hook=lambda d: _scope_event(d, lanes, path))
    except TraceError:
        raise
    except (ValueError, RecursionError) as exc:
        raise TraceError(f"{path}: not a Chrome trace (not JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{path}: not a Chrome trace (no 'traceEvents' list); pass the .chrome_trace file "
                         "hybrid profile or proton wrote")
    return [e for e in data["traceEvents"] if isinstance(e, Event)]


class _LaneNames:
    """Proton's ``pid`` and ``tid`` strings parsed once each: a trace repeats a few of them in
    every event."""

    def __init__(self):
        self.pids: dict[str, tuple[str, int] | None] = {}
        self.tids: dict[str, int | None] = {}

    def pid(self, text: str) -> tuple[str, int] | None:
        if text not in self.pids:
            match = _PID.match(text)
            self.pids[text] = None if match is None else (match["kernel"], int(match["cta"]))
        return self.pids[text]

    def tid(self, text: str) -> int | None:
        if text not in self.tids:
            match = _TID.match(text)
            self.tids[text] = None if match is None else int(match["warp"])
        return self.tids[text]


def _scope_event(d: dict, lanes: _LaneNames, path) -> Event | dict:
    """``d`` as an ``Event`` if it is a scope event, else ``d`` unchanged (the file's other objects)."""
    if d.get("ph") != "X" or d.get("cat") == "flow":
        return d
    pid, warp = lanes.pid(str(d.get("pid", ""))), lanes.tid(str(d.get("tid", "")))
    if pid is None or warp is None:
        return d
    where = f"{path}: the scope event {d.get('name')!r} on {d.get('pid')!r} {d.get('tid')!r}"
    times = []
    for key in ("ts", "dur"):
        value = d.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TraceError(f"{where} has no numeric {key} ({value!r}); pass the trace as Proton wrote it")
        if not math.isfinite(value) or value < 0:
            raise TraceError(f"{where} has {key} {value!r}: Proton writes finite, non-negative times (cycles / "
                             "1000), so the trace is damaged or was edited; take it again")
        times.append(round(value * 1000))
    if "name" not in d:
        raise TraceError(f"{where} has no name; pass the trace as Proton wrote it")
    return Event(pid[0], pid[1], warp, str(d["name"]), *times)


def analyze(events: list[Event]) -> list[KernelProfile]:
    """Per kernel, each scope's cycles per warp instance: a ``kernel`` scope event and the events
    of that warp it holds (launches of one kernel share CTA and warp numbers). In time, n log n
    for n events; memory, proportional to them."""
    lanes: dict[tuple, list[Event]] = {}
    for e in events:
        lanes.setdefault((e.kernel, e.cta, e.warp), []).append(e)
    per_kernel: dict[str, list[dict]] = {}
    overlapping: dict[str, int] = {}
    for (kernel, _, _), lane in lanes.items():
        if instances := _warp_instances(lane):
            per_kernel.setdefault(kernel, []).extend(instance.calls() for instance in instances)
            overlapping[kernel] = overlapping.get(kernel, 0) + sum(instance.overlaps for instance in instances)
    for kernel, count in overlapping.items():
        if count:
            warnings.warn(f"{kernel}: {count} of {len(per_kernel[kernel])} warp instances start before an earlier "
                          "launch's kernel span on the same warp ends (a launch outlasted Proton's gap between "
                          "launches); each scope event counts in the latest-started span holding it, so the "
                          "figures of those launches mix", TraceWarning, stacklevel=2)
    return [_kernel_profile(kernel, instances) for kernel, instances in per_kernel.items()]


@dataclass
class _WarpInstance:
    """One warp in one launch: each scope's calls (cycles), and how much of the kernel the
    outermost scopes seen so far cover (scopes arrive in start order, longest first)."""
    kernel: Event
    overlaps: bool   # starts before an earlier kernel span on its lane ends
    scopes: dict[str, list[int]] = field(default_factory=dict)
    covered: int = 0
    outer_end: float = -math.inf

    def add(self, e: Event) -> None:
        self.scopes.setdefault(e.scope, []).append(e.cycles)
        if e.start >= self.outer_end:   # not nested in the previous outermost scope
            self.covered, self.outer_end = self.covered + e.cycles, e.end

    def calls(self) -> dict[str, list[int]]:
        """The host gets what the outermost scopes leave of the kernel's cycles."""
        return {instrument.KERNEL_SCOPE: [self.kernel.cycles], **self.scopes,
                "host": [self.kernel.cycles - self.covered]}


def _warp_instances(lane: list[Event]) -> list[_WarpInstance]:
    """A lane's warp instances, one per ``kernel`` event, each with the scope events it holds: a
    sweep in start order. A scope event counts once, in the latest-started kernel span that holds
    it whole (spans overlap only when a launch outlasts Proton's gap between launches); one that
    no kernel span holds counts nowhere. ``open_`` keeps the spans a later event can still fall
    in, ends decreasing: a span ending no later than a newer one is never the latest to hold
    anything again."""
    lane.sort(key=lambda e: (e.start, -e.cycles, e.scope != instrument.KERNEL_SCOPE))
    instances: list[_WarpInstance] = []
    open_: list[_WarpInstance] = []
    negated_ends: list[int] = []   # -end of each open span, increasing: for bisect
    latest_end = -math.inf
    for e in lane:
        if e.scope == instrument.KERNEL_SCOPE:
            while open_ and open_[-1].kernel.end <= e.end:
                open_.pop(), negated_ends.pop()
            instances.append(_WarpInstance(e, overlaps=e.start < latest_end))
            latest_end = max(latest_end, e.end)
            open_.append(instances[-1]), negated_ends.append(-e.end)
            continue
        while open_ and open_[-1].kernel.end < e.start:
            open_.pop(), negated_ends.pop()
        holding = bisect.bisect_right(negated_ends, -e.end)   # open_[:holding] end at or after e
        if holding:
            open_[holding - 1].add(e)
    return instances


def _kernel_profile(kernel: str, instances: list[dict]) -> KernelProfile:
    seen: dict[str, list[list[int]]] = {}
    shares: dict[str, list[float]] = {}
    for instance in instances:
        cycles = max(1, instance[instrument.KERNEL_SCOPE][0])
        for name, calls in instance.items():
            seen.setdefault(name, []).append(calls)
            shares.setdefault(name, []).append(sum(calls) / cycles)
    ordered = [instrument.KERNEL_SCOPE] + sorted((n for n in seen if n not in (instrument.KERNEL_SCOPE, "host")),
                                                  key=_order) + ["host"]
    profile = KernelProfile(kernel, len(instances))
    for name in ordered:
        kind, regions = _kind(name)
        absent = [0.0] * (len(instances) - len(shares[name]))   # a warp instance that never called it
        profile.scopes.append(ScopeProfile(
            scope=name, kind=kind, regions=regions, calls=statistics.median(len(calls) for calls in seen[name]),
            cycles=Figures.of([sum(calls) for calls in seen[name]]),
            per_call=Figures.of([c for calls in seen[name] for c in calls]),
            share=statistics.median(shares[name] + absent)))
    return profile


def _kind(name: str) -> tuple[str, list[int]]:
    if name in (instrument.KERNEL_SCOPE, "host"):
        return name, []
    if (loop := _LOOP.match(name)) is not None:
        return "loop", [int(r[1:]) for r in loop["regions"].split(",") if r]
    if (region := _REGION.match(name)) is not None:
        return "region", [int(region["index"])]
    return "other", []   # a scope the kernel's author recorded with proton.record themselves


def _order(name: str) -> tuple:
    kind, regions = _kind(name)
    return (min(regions) if regions else math.inf, kind, name)


def to_json(profiles: list[KernelProfile], trace: str | None = None, loops: str | None = None) -> dict:
    return {"schema": SCHEMA, "unit": "cycles", "loops": loops, "trace": trace,
            "kernels": [asdict(p) for p in profiles]}


@dataclass
class Profile:
    """What a ``profiling()`` block measured, filled in when the block ends."""
    trace: Path
    loops: str
    kernels: list[KernelProfile] = field(default_factory=list)


@contextlib.contextmanager
def profiling(name: str | Path = "hybrid-profile", loops: str = "total", mode: str = "default") -> Iterator[Profile]:
    """Profile hybrid kernels launched in this block per region (needs a GPU). Proton writes
    ``<name>.chrome_trace``; the result's ``kernels`` are set when the block ends. ``loops``:
    ``"total"`` times a pipelined loop holding a region as a whole, ``"iteration"`` times the
    region in every iteration (``interop.instrumentation.instrument``); ``mode``: Proton's instrumentation mode."""
    import triton.profiler as proton
    result = Profile(Path(f"{name}.chrome_trace"), loops)
    with setting.using(loops=loops):
        proton.start(str(name), data="trace", backend="instrumentation", mode=mode)
        try:
            yield result
        finally:
            proton.finalize()
    result.kernels = analyze(read_trace(result.trace))
