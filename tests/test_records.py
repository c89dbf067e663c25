"""Region and boundary records (issue 21): typed and frozen, carried through the module by one
codec, returned as objects; their JSON (reports, bundles) keeps its shape and round-trips."""
import dataclasses
import json

import pytest

import hybrid
from interop import records
from interop.boundary import Boundary
from interop.region import CallSite, Region
from interop.triton.bindings import ir
from tests import kernels

REGION_KEYS = {"index", "function", "language", "call_site", "symbol", "specialization", "shared_bytes", "lines"}


def test_the_codec_round_trips_what_mlir_escapes():
    """Quotes, backslashes, newlines and non-ASCII text in the records survive MLIR's printing."""
    region = Region(0, 'odd"name\\', "triton", CallSite("/tmp/dir with space/k\u00e9.py", 12), "__hybrid_r0_x",
                    "x(fp32)\nsecond line", 64, ("/tmp/k.py:3", "/tmp/k.py:1"))
    boundary = Boundary(0, region.function, "in", 0, "x", (32, 64), "f32", "#blocked", "#blocked1", 1, "converted \\ 2")
    context = ir.context()
    ir.load_dialects(context)
    builder = ir.builder(context)
    module = builder.create_module()
    records.encode(module, builder, [region], [boundary])
    found = records.decode(str(module))
    assert found.boundaries == (boundary, )
    assert found.regions == (dataclasses.replace(region, lines=tuple(sorted(region.lines))), )
    assert records.decode("module {\n}") == records.Records()


def test_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Region(0, "f", "triton", CallSite("k.py", 1), "s", "f()").index = 1


@pytest.fixture(scope="module")
def fb() -> hybrid.FusedBinary:
    kernel, signature, constexprs = kernels.cases("sm90a")["control_flow"]
    return hybrid.compile(kernel, signature, constexprs, target="sm90a", num_warps=kernels.NUM_WARPS)


def test_a_build_returns_objects_whose_json_keeps_its_shape(fb):
    assert fb.regions and all(isinstance(r, Region) for r in fb.regions)
    assert fb.boundaries and all(isinstance(b, Boundary) for b in fb.boundaries)
    summary = json.loads(json.dumps(fb.summary()))
    assert all(set(r) == REGION_KEYS and isinstance(r["call_site"], str) for r in summary["regions"])
    assert [Region.from_json(r) for r in summary["regions"]] == fb.regions
    assert [Boundary.from_json(b) for b in summary["boundaries"]] == fb.boundaries
    rows = fb.report()["rows"]
    assert [r["call_site"] for r in rows if r["bucket"].startswith("r")] == [str(r.call_site) for r in fb.regions]
