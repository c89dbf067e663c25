"""Per-region Proton scopes: one balanced pair per region instance, around it, in the stitched IR;
pipelined loops timed whole unless asked; Proton's passes lower them into the binary."""
import re

import pytest

from examples import matmul_gluon_epilogue, softmax, softmax_gluon_stats, tile_matmul
import hybrid
from hybrid.compiler import stitched_ir
from interop.instrumentation import instrument
from interop.records import decode
from interop.locations import op_lines
from tests import kernels, triton_hosts

pytestmark = pytest.mark.version


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
    regions = decode(text).regions
    lines = text.splitlines()
    records = records_of(text)
    assert len(records) == 2 * len(regions) + 2 > 2
    assert records[0][1:] == ("start", "kernel") and records[-1][1:] == ("end", "kernel")   # around it all
    assert "tt.return" in lines[records[-1][0] + 1]
    position = {line.strip(): i for i, line in enumerate(lines)}
    ops = [(position[op_text], where) for _, where, op_text in op_lines(text) if op_text in position]
    region_lines = {w for r in regions for w in r.lines}
    for region in regions:
        name = f"r{region.index}:{region.function}"
        (start, ), (end, ) = ([i for i, kind, n in records if n == name and kind == k] for k in ("start", "end"))
        assert start < end
        inside = [where for i, where in ops if start < i < end]
        assert any(where in region.lines for where in inside)          # the region's code is in its scope
        host_only = [where for where in inside if where and where not in region_lines]
        assert not host_only, host_only[:3]                                # and no host code is


def records_of(text: str) -> list[tuple[int, str, str]]:
    return [(i, m.group(1), m.group(2)) for i, line in enumerate(text.splitlines())
            if (m := re.search(r'proton\.record (start|end) "([^"]+)"', line))]


def loop_extent(lines: list[str]) -> tuple[int, int]:
    """First and last line of the first ``scf.for`` (its closing brace is indented as it is)."""
    start = next(i for i, line in enumerate(lines) if "scf.for" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(" " * indent + "}"))
    return start, end


def instrumented(target: str, case: str, loops: str = "total") -> tuple[str, str]:
    """A Triton-host case's stitched IR with records, and the scope name of its one region
    (region indices count calls a Triton 3.6 loop's dry visit discarded)."""
    kernel, signature, constexprs = triton_hosts.cases(target)[case]
    text = stitched_ir(kernel, signature, constexprs, target, num_warps=kernels.NUM_WARPS, instrument_regions=True,
                       loops=loops)
    region = decode(text).regions[0]
    return text, f"r{region.index}:{region.function}"


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_pipelined_loop_is_timed_whole_by_default(target):
    """``loops="total"``: no record inside the loop Triton pipelined, one scope around it naming
    the region; copies a pipeliner peeled out of the loop keep their own pairs."""
    text, scope = instrumented(target, "pipelined_loop", "total")
    lines = text.splitlines()
    first, last = loop_extent(lines)
    records = records_of(text)
    assert not [r for r in records if first < r[0] < last]
    loop = f"loop0[{scope.split(':')[0]}]"
    (start, ), (end, ) = ([i for i, kind, name in records if name == loop and kind == k] for k in ("start", "end"))
    assert start == first - 1 and end == last + 1
    outside = [(kind, name) for i, kind, name in records if name == scope]
    assert outside == [("start", scope), ("end", scope)] * (len(outside) // 2)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_pipelined_loop_per_iteration_when_asked(target):
    text, scope = instrumented(target, "pipelined_loop", "iteration")
    first, last = loop_extent(text.splitlines())
    inside = [(kind, name) for i, kind, name in records_of(text) if first < i < last]
    assert inside == [("start", scope), ("end", scope)]
    assert "loop0" not in text


def test_loop_not_pipelined_keeps_a_pair_per_iteration():
    """A loop with no pipeline (nothing in flight across iterations) is timed per iteration in
    both modes; the profile sums the iterations for ``total``."""
    text, scope = instrumented("sm90a", "control_flow")
    first, last = loop_extent(text.splitlines())
    inside = [(kind, name) for i, kind, name in records_of(text) if first < i < last]
    assert inside == [("start", scope), ("end", scope)] and scope.endswith(":g_add_one")


def test_unknown_loop_timing_names_the_choices():
    with pytest.raises(ValueError, match="total, iteration"):
        with instrument.forced("sometimes"):
            pass


BINARY_CASES = {"softmax": CASES["softmax"], "triton_host_control_flow": CASES["triton_host_control_flow"]}


@pytest.mark.parametrize("target", ["sm80", "sm90a", "sm100a", "gfx942", "gfx950"])
@pytest.mark.parametrize("case", list(BINARY_CASES))
def test_proton_lowers_the_scopes_into_the_binary(case, target):
    """Built as a profiled launch builds it (Proton's hook and passes, without a GPU): one kernel
    entry, a clock read per record (AMD may read it more often), Proton's profile buffer in the
    metadata, the scopes named after the regions; a plain build has none of it."""
    kernel, signature, constexprs = BINARY_CASES[case](target)
    fb = hybrid.compile(kernel, signature, constexprs, target, num_warps=kernels.NUM_WARPS, instrument_regions=True)
    assert fb.kernel_entries == 1
    assert fb.scopes == ["kernel"] + [f"r{r.index}:{r.function}" for r in fb.regions]
    records = fb.asm["ttgir"].count("proton.record")
    clocks = len(re.findall(r"mov\.u32\s+%r\d+, %clock;", fb.assembly)) + fb.assembly.count("s_memtime")
    assert clocks == records if target.startswith("sm") else clocks >= records
    assert fb.metadata["profile_scratch_size"] > 0
    plain = hybrid.compile(kernel, signature, constexprs, target, num_warps=kernels.NUM_WARPS)
    assert plain.scopes == [] and "%clock;" not in plain.assembly and "s_memtime" not in plain.assembly


def test_no_records_unless_asked():
    kernel, signature, constexprs = CASES["softmax"]("sm90a")
    assert "proton.record" not in stitched_ir(kernel, signature, constexprs, "sm90a")


def test_profiled_build_over_shared_memory_names_protons_buffer():
    """Proton keeps its records in shared memory: a kernel that fits plain may not fit profiled,
    and the error says so instead of only listing the regions."""
    from examples import matmul
    from interop.errors import SharedMemoryError

    def build():   # the epilogue converting its 128x256 tile to rows at once: 64 KiB of shared memory
        return hybrid.compile(matmul.matmul_kernel, matmul.SIGNATURE, {**matmul.constexprs("gfx942"), "FROM_ACC": False},
                              target="gfx942", divisible=matmul.DIVISIBLE, **matmul.options("gfx942"))

    assert build().metadata["shared"] <= 65536
    with pytest.raises(SharedMemoryError, match="Proton's per-warp record buffer") as caught:
        with instrument.forced():
            build()
    assert "gfx942 has 65536 B" in str(caught.value)
