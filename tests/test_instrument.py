"""Per-region Proton scopes in the stitched IR: one balanced pair per region instance, around it."""
import re

import pytest

from examples import matmul_gluon_epilogue, softmax, softmax_gluon_stats, tile_matmul
from hybrid.compile import module_json_attr, stitched_ir
from interop.locations import op_lines
from interop.source import REGIONS_ATTR
from tests import kernels, triton_hosts


def example_case(example, kernel_name: str, target: str):
    return getattr(example, kernel_name), example.SIGNATURE, example.constexprs(target)


CASES = {
    "softmax": lambda t: example_case(softmax, "softmax_kernel", t),
    "tile_matmul": lambda t: example_case(tile_matmul, "matmul_kernel", t),
    "softmax_gluon_stats": lambda t: example_case(softmax_gluon_stats, "softmax_kernel", t),
    "matmul_gluon_epilogue": lambda t: example_case(matmul_gluon_epilogue, "matmul_kernel", t),
    "gluon_host_control_flow": lambda t: kernels.cases(t)["control_flow"],
    "triton_host_control_flow": lambda t: triton_hosts.cases(t)["control_flow"],
}


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
@pytest.mark.parametrize("case", list(CASES))
def test_one_balanced_pair_around_each_region(case, target):
    kernel, signature, constexprs = CASES[case](target)
    text = stitched_ir(kernel, signature, constexprs, target, num_warps=kernels.NUM_WARPS, instrument_regions=True)
    regions = module_json_attr(text, REGIONS_ATTR)
    lines = text.splitlines()
    records = [(i, m.group(1), m.group(2)) for i, line in enumerate(lines)
               if (m := re.search(r'proton\.record (start|end) "([^"]+)"', line))]
    assert len(records) == 2 * len(regions) > 0
    position = {line.strip(): i for i, line in enumerate(lines)}
    ops = [(position[op_text], where) for _, where, op_text in op_lines(text) if op_text in position]
    region_lines = {w for r in regions for w in r["lines"]}
    for region in regions:
        name = f"r{region['index']}:{region['function']}"
        (start, ), (end, ) = ([i for i, kind, n in records if n == name and kind == k] for k in ("start", "end"))
        assert start < end
        inside = [where for i, where in ops if start < i < end]
        assert any(where in region["lines"] for where in inside)          # the region's code is in its scope
        host_only = [where for where in inside if where and where not in region_lines]
        assert not host_only, host_only[:3]                                # and no host code is


def test_no_records_unless_asked():
    kernel, signature, constexprs = CASES["softmax"]("sm90a")
    assert "proton.record" not in stitched_ir(kernel, signature, constexprs, "sm90a")
