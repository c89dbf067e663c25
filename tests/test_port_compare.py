"""``hybrid.port.compare``: a region and its port, run side by side (in the interpreter here)."""
import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from examples import softmax  # noqa: E402
from hybrid.port import compare  # noqa: E402


@gluon.jit
def _in_host_rows(v, HOST: gl.constexpr):
    """A row statistic back in the caller's layout, as a Gluon function that the caller uses
    without converting must return it (Gluon's results keep the layouts their code gives them)."""
    return gl.convert_layout(v, gl.SliceLayout(1, HOST))


@gluon.jit
def row_stats_port(x, n_cols, BN: gl.constexpr):
    """A Gluon port of ``softmax.row_stats`` (the kernel's Triton region)."""
    HOST: gl.constexpr = x.type.layout
    L: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0])
    x = gl.convert_layout(x, L)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.where(cols[None, :] < n_cols, x, float("-inf"))
    m = gl.max(x, axis=1)
    return _in_host_rows(m, HOST), _in_host_rows(gl.sum(gl.exp(x - m[:, None]), axis=1), HOST)


@gluon.jit
def row_stats_port_off_by_one(x, n_cols, BN: gl.constexpr):
    """The same port with a planted bug: the last column of each row is masked off."""
    HOST: gl.constexpr = x.type.layout
    L: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0])
    x = gl.convert_layout(x, L)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.where(cols[None, :] < n_cols - 1, x, float("-inf"))
    m = gl.max(x, axis=1)
    return _in_host_rows(m, HOST), _in_host_rows(gl.sum(gl.exp(x - m[:, None]), axis=1), HOST)


def _launch_args(n_rows=40, n_cols=97):
    p = softmax.problem(n_rows, n_cols, device="cpu")
    grid = (triton.cdiv(n_rows, softmax.BM), )
    args = (p["x"], p["y"], n_rows, n_cols, p["x"].stride(0))
    return grid, args, {"num_warps": softmax.NUM_WARPS, **softmax.constexprs("sm90a")}


@pytest.mark.parametrize("kernel", [softmax.softmax_kernel, softmax.softmax_triton], ids=["gluon-host", "triton-host"])
def test_a_faithful_port_compares_equal(kernel):
    grid, args, kwargs = _launch_args()
    if kernel is softmax.softmax_triton:
        kwargs.pop("L")
    result = compare(kernel, region=softmax.row_stats, candidate=row_stats_port, grid=grid, args=args, kwargs=kwargs,
                     interpret=True, target="sm90a", atol=1e-6, rtol=1e-6)
    assert result.ok, result.report()
    assert [o.name for o in result.outputs] == ["y_ptr"]   # x is read only
    assert result.mode == "interpreter (sm90a)"


def test_a_planted_bug_in_the_candidate_is_detected():
    grid, args, kwargs = _launch_args()
    result = compare(softmax.softmax_kernel, region=softmax.row_stats, candidate=row_stats_port_off_by_one, grid=grid,
                     args=args, kwargs=kwargs, interpret=True, target="sm90a")
    assert not result.ok
    assert result.outputs[0].max_abs > 1e-3
    assert "MISMATCH" in result.report() and "y_ptr" in result.report()


def test_inputs_are_not_modified():
    grid, args, kwargs = _launch_args()
    before = args[1].clone()
    compare(softmax.softmax_kernel, region=softmax.row_stats, candidate=row_stats_port, grid=grid, args=args,
            kwargs=kwargs, interpret=True, target="sm90a")
    assert torch.equal(args[1].nan_to_num(7), before.nan_to_num(7))


def test_outputs_passed_by_keyword_are_compared_and_left_as_given():
    """A library launching its kernel with every argument by keyword (flash-linear-attention's
    chunk kernels): each run writes its own copy of the output, and a planted bug shows there."""
    grid, args, kwargs = _launch_args()
    by_name = dict(zip(softmax.softmax_kernel.arg_names, args))
    before = by_name["y_ptr"].clone()
    result = compare(softmax.softmax_kernel, region=softmax.row_stats, candidate=row_stats_port_off_by_one, grid=grid,
                     args=(), kwargs={**by_name, **kwargs}, interpret=True, target="sm90a", machine_code_report=False)
    assert [o.name for o in result.outputs] == ["y_ptr"] and not result.ok
    assert torch.equal(by_name["y_ptr"].nan_to_num(7), before.nan_to_num(7))


def test_a_region_the_kernel_does_not_call_is_an_error():
    grid, args, kwargs = _launch_args()
    with pytest.raises(ValueError, match="does not call row_stats_port"):
        compare(softmax.softmax_kernel, region=row_stats_port, candidate=softmax.row_stats, grid=grid, args=args,
                kwargs=kwargs, interpret=True)


@pytest.mark.slow
def test_a_started_port_passes_its_generated_compare_test_on_the_cpu(tmp_path):
    """``hybrid port start`` end to end: upstream's translation, the generated test, the interpreter."""
    from hybrid.port import start
    from tests.port_kernels import run_generated_test
    files = start("examples/softmax.py:row_stats", "sm90a", "softmax_triton", tmp_path, 4, translator=True)
    run_generated_test(files, "test_row_stats_gluon_sm90a_matches_row_stats")


def test_a_keyword_naming_a_kernel_parameter_binds_to_it_not_to_the_launch_option():
    """Upstream fused softmax takes ``num_stages`` as a constexpr parameter: Triton's launcher
    binds the keyword to the parameter, and so does the build that reports machine code."""
    from bench import parity_ports as pp
    from hybrid.port.launch import build_arguments
    x = torch.zeros(4, 1000)
    signature, constexprs, options = build_arguments(pp.softmax_rows, (x, x, 1000, 1000, 4, 1000),
                                                     {"BLOCK_SIZE": 1024, "num_stages": 3, "num_warps": 8})
    assert constexprs == {"BLOCK_SIZE": 1024, "num_stages": 3}
    assert options == {"num_warps": 8, "divisible": ()} and signature["n_rows"] == "i32"


@gluon.jit
def row_stats_port_rescaled(x, n_cols, BN: gl.constexpr):
    """The port with every row's sum 1e-4 larger: what an accumulation in another order is to fp16."""
    m, s = row_stats_port(x, n_cols, BN)
    return m, s * 1.0001


@pytest.mark.parametrize("relative_tolerance, ok", [(None, False), (1e-3, True), (1e-5, False)])
def test_a_relative_tolerance_judges_outputs_by_their_norm(relative_tolerance, ok):
    """Outputs summed in a varying order differ element by element from run to run; with a
    ``relative_tolerance`` compare judges ``||candidate - original|| / ||original||`` instead."""
    grid, args, kwargs = _launch_args()
    result = compare(softmax.softmax_kernel, region=softmax.row_stats, candidate=row_stats_port_rescaled, grid=grid,
                     args=args, kwargs=kwargs, interpret=True, target="sm90a", atol=1e-6, rtol=1e-6,
                     relative_tolerance=relative_tolerance)
    assert result.ok is ok, result.report()
    assert 5e-5 < result.outputs[0].relative < 2e-4
    assert f"relative {result.outputs[0].relative:.2g}" in result.report()
