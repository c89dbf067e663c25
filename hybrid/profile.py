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


@dataclass(frozen=True)
class Event:
    """One scope instance on one warp, in cycles from that CTA's first record."""
    kernel: str
    cta: int
    warp: int
    scope: str
    start: int
    cycles: int


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


def read_trace(path: str | Path) -> list[Event]:
    """The scope events of a Proton instrumentation trace (other lanes and flow markers skipped);
    ``TraceError`` naming the file for anything else."""
    try:
        data = json.loads(Path(path).read_bytes())
    except (ValueError, RecursionError) as exc:
        raise TraceError(f"{path}: not a Chrome trace (not JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{path}: not a Chrome trace (no 'traceEvents' list); pass the .chrome_trace file "
                         "hybrid profile or proton wrote")
    events = []
    for i, e in enumerate(data["traceEvents"]):
        pid, tid = (_PID.match(str(e.get("pid", ""))), _TID.match(str(e.get("tid", "")))) if isinstance(e, dict) \
            else (None, None)
        if pid is None or tid is None or e.get("ph") != "X" or e.get("cat") == "flow":
            continue
        try:
            events.append(Event(pid["kernel"], int(pid["cta"]), int(tid["warp"]), str(e["name"]),
                                round(e["ts"] * 1000), round(e["dur"] * 1000)))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise TraceError(f"{path}: traceEvents[{i}] is a scope event without a numeric ts and dur or a "
                             "name") from None
    return events


def analyze(events: list[Event]) -> list[KernelProfile]:
    """Per kernel, each scope's cycles per warp instance (a ``kernel`` scope event and every
    event of that warp within it: launches of one kernel share CTA and warp numbers)."""
    lanes: dict[tuple, list[Event]] = {}
    for e in events:
        lanes.setdefault((e.kernel, e.cta, e.warp), []).append(e)
    per_kernel: dict[str, list[dict]] = {}
    for (kernel, _, _), lane in lanes.items():
        lane.sort(key=lambda e: (e.start, -e.cycles))
        scopes = [e for e in lane if e.scope != instrument.KERNEL_SCOPE]
        starts = [e.start for e in scopes]
        for k in (e for e in lane if e.scope == instrument.KERNEL_SCOPE):
            end = k.start + k.cycles
            inside = [e for e in scopes[bisect.bisect_left(starts, k.start):bisect.bisect_right(starts, end)]
                      if e.start + e.cycles <= end]
            per_kernel.setdefault(kernel, []).append(_warp_instance(k, inside))
    return [_kernel_profile(kernel, instances) for kernel, instances in per_kernel.items()]


def _warp_instance(kernel: Event, inside: list[Event]) -> dict[str, list[int]]:
    """Each scope's calls (cycles) on one warp in one launch; the host gets what the outermost
    scopes leave of the kernel's cycles (``inside`` is in start order, longest first)."""
    calls: dict[str, list[int]] = {instrument.KERNEL_SCOPE: [kernel.cycles]}
    covered, end = 0, -math.inf
    for e in inside:
        calls.setdefault(e.scope, []).append(e.cycles)
        if e.start >= end:   # not nested in the previous outermost scope
            covered, end = covered + e.cycles, e.start + e.cycles
    calls["host"] = [kernel.cycles - covered]
    return calls


def _kernel_profile(kernel: str, instances: list[dict]) -> KernelProfile:
    names = list(dict.fromkeys(name for instance in instances for name in instance))
    ordered = [instrument.KERNEL_SCOPE] + sorted((n for n in names if n not in (instrument.KERNEL_SCOPE, "host")),
                                                  key=_order) + ["host"]
    profile = KernelProfile(kernel, len(instances))
    for name in ordered:
        seen = [i[name] for i in instances if name in i]
        totals = [sum(calls) for calls in seen]
        kind, regions = _kind(name)
        profile.scopes.append(ScopeProfile(
            scope=name, kind=kind, regions=regions, calls=statistics.median(len(calls) for calls in seen),
            cycles=Figures.of(totals), per_call=Figures.of([c for calls in seen for c in calls]),
            share=statistics.median(sum(i.get(name, [0])) / max(1, i[instrument.KERNEL_SCOPE][0]) for i in instances)))
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
