"""Per-region profiles from Proton's instrumentation trace; ``hybrid profile``.

On the CPU the analysis reads traces written in Proton's format from a known timeline (what
each warp did, generated here), so the figures can be checked against it; the GPU tests
profile the examples for real.
"""
import json
import random
import statistics
import warnings
from pathlib import Path

import pytest

from hybrid import profile
from hybrid.cli import main

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "softmax_kernel"


def timeline(seed: int, launches: int = 2, ctas: int = 3, warps: int = 4, iterations: int = 5) -> list[dict]:
    """What each warp of each CTA did, per launch: a region called once per loop iteration (r0),
    then a region (r1) with a nested region inside it (r2), with host code before, between and
    after. Each entry: the lane, the kernel's span and each scope's calls as (start, cycles)."""
    rng = random.Random(seed)
    lanes = []
    for launch in range(launches):
        base = launch * 10_000_000     # launches follow one another on the same lanes
        for cta in range(ctas):
            for warp in range(warps):
                t, calls = base + rng.randrange(0, 500), {}
                start = t
                t += rng.randrange(50, 300)                                    # host code
                for _ in range(iterations):
                    cycles = rng.randrange(100, 900)
                    calls.setdefault("r0:row_stats", []).append((t, cycles))
                    t += cycles + rng.randrange(10, 60)                        # loop overhead
                r1 = rng.randrange(2000, 4000)
                inner = rng.randrange(100, r1 - 100)
                calls["r1:epilogue"] = [(t, r1)]
                calls["r2:helper"] = [(t + 50, inner)]
                t += r1 + rng.randrange(20, 200)                               # host code
                lanes.append({"cta": cta, "warp": warp, "kernel": (start, t - start), "calls": calls})
    return lanes


def write_proton_trace(path: Path, lanes: list[dict]) -> None:
    """The timeline as Proton's instrumentation trace: one complete event per scope instance on
    a ``warp <w> (line <l>)`` lane of a ``<kernel> Core<sm> CTA<cta>`` process, times in
    microseconds at 1 GHz; plus the lanes Proton adds that are not scopes."""
    events = [{"name": "call path", "cat": "call_path", "ph": "X", "pid": "Kernel Call Path", "tid": "path 0",
               "ts": 0, "dur": 5}]
    for lane in lanes:
        pid = f"{KERNEL} Core{lane['cta'] % 2} CTA{lane['cta']}"
        scopes = [("kernel", *lane["kernel"], 0)] + [(name, s, c, 1 + (name == "r2:helper"))
                                                      for name, calls in lane["calls"].items() for s, c in calls]
        for name, start, cycles, line in scopes:
            events.append({"name": name, "cat": KERNEL, "ph": "X", "pid": pid, "tid": f"warp {lane['warp']} (line {line})",
                           "ts": start / 1000, "dur": cycles / 1000, "args": {"Frequency (MHz)": 1000.0}})
        events.append({"name": "r0:row_stats", "cat": "flow", "ph": "X", "pid": pid, "tid": f"warp {lane['warp']} (line 0)",
                       "ts": lane["kernel"][0] / 1000, "dur": 0, "bind_id": 1})
    random.Random(0).shuffle(events)
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[-(-9 * len(ordered) // 10) - 1]


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> tuple[Path, list[dict]]:
    lanes = timeline(seed=7)
    path = tmp_path_factory.mktemp("trace") / "run.chrome_trace"
    write_proton_trace(path, lanes)
    return path, lanes


def test_every_warp_of_every_launch_counts_once(traced):
    path, lanes = traced
    (kernel, ) = profile.analyze(profile.read_trace(path))
    assert kernel.kernel == KERNEL and kernel.warps == len(lanes)
    assert [s.scope for s in kernel.scopes] == ["kernel", "r0:row_stats", "r1:epilogue", "r2:helper", "host"]
    assert [s.kind for s in kernel.scopes] == ["kernel", "region", "region", "region", "host"]


@pytest.mark.parametrize("scope", ["kernel", "r0:row_stats", "r1:epilogue", "r2:helper"])
def test_cycles_per_warp_and_per_call_match_the_timeline(traced, scope):
    path, lanes = traced
    (kernel, ) = profile.analyze(profile.read_trace(path))
    calls = [[lane["kernel"]] if scope == "kernel" else lane["calls"][scope] for lane in lanes]
    totals = [sum(c for _, c in lane_calls) for lane_calls in calls]
    got = kernel.scope(scope)
    assert got.calls == len(calls[0])
    assert (got.cycles.median, got.cycles.p90) == (statistics.median(totals), p90(totals))
    per_call = [c for lane_calls in calls for _, c in lane_calls]
    assert (got.per_call.median, got.per_call.p90) == (statistics.median(per_call), p90(per_call))
    shares = [t / lane["kernel"][1] for t, lane in zip(totals, lanes)]
    assert got.share == pytest.approx(statistics.median(shares))


def test_host_is_what_the_outermost_regions_leave(traced):
    """A region nested in another (r2 in r1) is not taken off the host twice."""
    path, lanes = traced
    (kernel, ) = profile.analyze(profile.read_trace(path))
    host = [lane["kernel"][1] - sum(c for name in ("r0:row_stats", "r1:epilogue") for _, c in lane["calls"][name])
            for lane in lanes]
    assert kernel.scope("host").cycles.median == statistics.median(host)
    assert all(h > 0 for h in host)


def test_loop_scopes_name_their_regions():
    assert profile._kind("loop0[r1,r3]") == ("loop", [1, 3])
    assert profile._kind("r12:g_scale") == ("region", [12])
    assert profile._kind("mine") == ("other", [])


def test_cli_reads_a_trace_and_writes_stable_json(traced, tmp_path, capsys):
    path, lanes = traced
    out = tmp_path / "prof"
    assert main(["profile", "--trace", str(path), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "r1:epilogue" in printed and "host" in printed
    data = json.loads((tmp_path / "prof.json").read_text())
    assert set(data) == {"schema", "unit", "loops", "trace", "kernels"} and data["schema"] == profile.SCHEMA
    (kernel, ) = data["kernels"]
    assert set(kernel) == {"kernel", "warps", "scopes"}
    assert set(kernel["scopes"][0]) == {"scope", "kind", "regions", "calls", "cycles", "per_call", "share"}
    assert set(kernel["scopes"][0]["cycles"]) == {"median", "p90"}


def test_cli_without_a_gpu_says_what_works_here(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["profile", str(ROOT / "examples/softmax.py"), "-o", str(tmp_path / "p")]) == 2
    printed = " ".join(capsys.readouterr().out.split())
    assert "no GPU" in printed and "hybrid report" in printed and "--trace" in printed


PROFILED_EXAMPLES = ["softmax", "softmax_gluon_stats", "matmul_gluon_epilogue", "tma_stage"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", PROFILED_EXAMPLES)
def test_regions_profiled_on_gpu(name, tmp_path):
    """Every region took time, and the outermost scopes and the host account for the kernel's
    cycles (medians, so within 10%); the profiled launch still computes the right result."""
    import importlib

    from examples.run import current_gpu_target
    example = importlib.import_module(f"examples.{name}")
    target = current_gpu_target()
    if target is None or target in getattr(example, "SKIP", {}):
        pytest.skip("GPU architecture not among the built targets, or the example skips it")
    case = getattr(example, "CASES", [{}])[0]
    p = example.problem(*example.CHECK_SIZE, **case, device="cuda")
    with profile.profiling(tmp_path / name) as measured:
        out = example.run("hybrid", p, target)
    assert example.error(out, p) <= example.TOLERANCE
    assert measured.trace.exists()
    (kernel, ) = measured.kernels
    timed = [s for s in kernel.scopes if s.kind in ("region", "loop")]
    assert timed and all(s.cycles.median > 0 for s in timed)
    outermost = [s for s in timed if not any(set(s.regions) < set(o.regions) for o in timed)]
    accounted = sum(s.cycles.median for s in outermost) + kernel.scope("host").cycles.median
    assert accounted == pytest.approx(kernel.scope("kernel").cycles.median, rel=0.10)


def reference_analyze(events: list[profile.Event]) -> dict:
    """The analysis by its definition, quadratic: each scope event counts in the latest-started
    kernel span of its lane that holds it whole (the last such in the trace's order if two are
    the same span); the host is what the scopes not nested in the previous outermost one leave."""
    def lane(e):
        return e.kernel, e.cta, e.warp

    def order(e):
        return e.start, -e.cycles

    kernels = [e for e in events if e.scope == "kernel"]
    scopes = sorted((e for e in events if e.scope != "kernel"), key=order)

    def owner(e):
        holding = [k for k in reversed(kernels) if lane(k) == lane(e) and k.start <= e.start and e.end <= k.end]
        return max(holding, key=order, default=None)

    owners = [owner(e) for e in scopes]
    per_kernel: dict[str, list[dict]] = {}
    for k in kernels:
        calls, covered, end = {"kernel": [k.cycles]}, 0, -float("inf")
        for e in (e for e, o in zip(scopes, owners) if o is k):
            calls.setdefault(e.scope, []).append(e.cycles)
            if e.start >= end:
                covered, end = covered + e.cycles, e.end
        calls["host"] = [k.cycles - covered]
        per_kernel.setdefault(k.kernel, []).append(calls)
    figures = {}
    for kernel, instances in per_kernel.items():
        names = {name for instance in instances for name in instance}
        figures[kernel] = {"warps": len(instances), "scopes": {name: {
            "calls": statistics.median(len(i[name]) for i in instances if name in i),
            "cycles": profile.Figures.of([sum(i[name]) for i in instances if name in i]),
            "per_call": profile.Figures.of([c for i in instances if name in i for c in i[name]]),
            "share": statistics.median(sum(i.get(name, [0])) / max(1, i["kernel"][0]) for i in instances),
        } for name in names}}
    return figures


def random_events(rng: random.Random) -> list[profile.Event]:
    """A small trace: kernel spans on a few lanes, some of them overlapping (a launch that
    outlasts Proton's gap) or the same span twice, and scope events in them, across them, nested,
    partly overlapping and outside every span."""
    events = []
    for kernel in rng.sample(["k_a", "k_b"], rng.randint(1, 2)):
        for cta, warp in {(rng.randrange(2), rng.randrange(2)) for _ in range(rng.randint(1, 3))}:
            spans = [(rng.randrange(0, 60, 5), rng.randrange(0, 40, 5)) for _ in range(rng.randint(0, 4))]
            spans += rng.sample(spans, min(len(spans), rng.randint(0, 1)))
            events += [profile.Event(kernel, cta, warp, "kernel", s, c) for s, c in spans]
            events += [profile.Event(kernel, cta, warp, rng.choice(["r0:f", "r1:g", "loop0[r0]", "mine"]),
                                     rng.randrange(-5, 100, 5), rng.randrange(0, 30, 5))
                       for _ in range(rng.randint(0, 12))]
    rng.shuffle(events)
    return events


def test_analysis_agrees_with_its_quadratic_definition_on_random_traces():
    compared = overlapping = 0
    for seed in range(400):
        events = random_events(random.Random(seed))
        with warnings.catch_warnings():   # overlapping spans: the figures are what the test compares
            warnings.simplefilter("ignore", profile.TraceWarning)
            profiles = profile.analyze(list(events))
        got = {p.kernel: {"warps": p.warps, "scopes": {s.scope: {"calls": s.calls, "cycles": s.cycles,
                                                                  "per_call": s.per_call, "share": s.share}
                                                        for s in p.scopes}}
               for p in profiles}
        assert got == reference_analyze(events), f"seed {seed}"
        compared += bool(got)
        spans = sorted((e.kernel, e.cta, e.warp, e.start, e.end) for e in events if e.scope == "kernel")
        overlapping += any(a[:3] == b[:3] and b[3] < a[4] for a, b in zip(spans, spans[1:]))
    assert compared > 300 and overlapping > 50   # the draws reach the cases that matter


def test_a_launch_that_outlasts_the_gap_to_the_next_keeps_its_own_scopes():
    """Kernel spans on one lane that overlap (each launch 1000 cycles, the next 100 cycles
    later): each scope event counts in the latest-started span holding it, its own launch's,
    not in every span holding it."""
    events = []
    for launch in range(50):
        events += [profile.Event("k", 0, 0, "kernel", launch * 100, 1000),
                   profile.Event("k", 0, 0, "r0:f", launch * 100 + 10, 50)]
    with pytest.warns(profile.TraceWarning, match="k: 49 of 50 warp instances start before an earlier launch"):
        (kernel, ) = profile.analyze(events)
    region = kernel.scope("r0:f")
    assert kernel.warps == 50 and (region.calls, region.cycles.p90, region.share) == (1, 50, 0.05)
    assert kernel.scope("host").cycles.median == 950


@pytest.mark.parametrize("key, value, says", [("dur", -0.5, "dur -0.5"), ("ts", -2.0, "ts -2.0"),
                                              ("dur", float("nan"), "dur nan"), ("ts", float("inf"), "ts inf"),
                                              ("dur", True, "no numeric dur"), ("ts", "3", "no numeric ts")])
def test_a_negative_or_non_finite_time_is_a_clear_error(tmp_path, capsys, key, value, says):
    lanes = timeline(seed=3, launches=1, ctas=1, warps=1)
    path = tmp_path / "bad.chrome_trace"
    write_proton_trace(path, lanes)
    data = json.loads(path.read_text())
    damaged = next(e for e in data["traceEvents"] if e["name"] == "r1:epilogue")
    damaged[key] = value
    path.write_text(json.dumps(data))
    with pytest.raises(profile.TraceError, match="r1:epilogue") as raised:
        profile.read_trace(path)
    assert says in str(raised.value) and str(path) in str(raised.value)
    with pytest.raises(SystemExit) as exited:
        main(["profile", "--trace", str(path), "-o", str(tmp_path / "p")])
    printed = " ".join(capsys.readouterr().err.split())
    assert exited.value.code == 2 and "r1:epilogue" in printed and "Traceback" not in printed


def test_launches_apart_as_proton_writes_them_warn_of_nothing(traced):
    path, _ = traced
    with warnings.catch_warnings():
        warnings.simplefilter("error", profile.TraceWarning)
        profile.analyze(profile.read_trace(path))
