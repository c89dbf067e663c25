"""Bad input ends in a Python exception that says what and where, never in a signal."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hybrid

pytestmark = pytest.mark.version

ROOT = Path(__file__).resolve().parents[1]
BAD = "tests/bad_kernels.py"


def run_case(case: str, target: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tests.bad_kernels", case, target], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def line_of(text: str, path: str = BAD) -> int:
    return next(i for i, line in enumerate((ROOT / path).read_text().splitlines(), 1) if text in line)


def assert_python_error(proc: subprocess.CompletedProcess, exception: str, *needles: str) -> None:
    """A Python ``exception`` whose own message (not other stderr output, such as MLIR's
    diagnostics) holds every needle, and no leak report from nanobind at exit."""
    assert proc.returncode == 1, f"expected a Python exception, got exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "Traceback" in proc.stderr and f"{exception}: " in proc.stderr, proc.stderr[-3000:]
    message = proc.stderr[proc.stderr.rindex(f"{exception}: "):]
    for needle in needles:
        assert needle in message, f"{needle!r} missing from:\n{message[-3000:]}"
    assert "nanobind" not in proc.stderr, f"the process did not exit quietly:\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("target", ["sm90a", "sm80"])
def test_bug_inside_region_names_region_and_call_site(target):
    proc = run_case("shape_mismatch", target)
    call = f"{BAD}:{line_of('y = t_shape_bug(')}"
    assert_python_error(proc, "RegionError", "region 't_shape_bug'", call, "hint:")


def test_shared_memory_into_triton_region_is_rejected():
    proc = run_case("shared_into_region", "sm90a")
    assert_python_error(proc, "RegionError", "region 't_identity'", f"{BAD}:{line_of('t_identity(smem)')}",
                        "cannot be passed into a Triton region")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_constexpr_layout_for_wrong_warp_size(target):
    proc = run_case("constexpr_layout", target)
    assert_python_error(proc, "LayoutError", "k_shape_mismatch", "constexpr argument 'L1'", "32 threads per warp",
                        "64-thread warps", "hint:")


def test_constexpr_layout_for_wrong_num_warps():
    proc = run_case("warps", "sm90a")
    assert_python_error(proc, "LayoutError", "constexpr argument 'L1'", "num_warps=8", "hint:")


def test_inline_layout_for_wrong_warp_size():
    proc = run_case("inline_layout", "gfx942")
    assert_python_error(proc, "LayoutError", "k_inline_layout", "does not verify for hip:gfx942",
                        f"{BAD}:{line_of('32-wide warps only')}")


def test_host_layout_for_wrong_warp_size_names_the_region():
    """A Triton region is lowered in the host's layouts: one written for 32-thread warps is
    named at the call, not left to fail inside Triton's passes on a wave64 target."""
    proc = run_case("region_inline_layout", "gfx942")
    assert_python_error(proc, "RegionError", "region 't_identity'", f"{BAD}:{line_of('t_identity(gl.load(')}",
                        "the host's layout of 'x'", "32 threads per warp", "64-thread warps", "hint:")


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_bug_inside_gluon_region_names_it_and_the_call_site(target):
    proc = run_case("gluon_shape_bug", target)
    assert_python_error(proc, "RegionError", "region 'g_shape_bug'",
                        f"{BAD}:{line_of('g_shape_bug(tl.load(')}", "hint:")


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_gluon_region_with_an_op_of_another_architecture(target):
    proc = run_case("gluon_wrong_arch", target)
    assert_python_error(proc, "RegionError", "region 'g_hopper_fence'", f"{BAD}:{line_of('REGION(tl.load(')}",
                        f"{BAD}:{line_of('# sm90+ only')} in g_hopper_fence", "fence_async_shared",
                        f"which {target} does not have", "sm90+", "hint:")


def test_warp_specialize_in_a_gluon_region_before_sm90():
    """An LLVM abort upstream (setmaxnreg cannot be selected on sm80)."""
    proc = run_case("gluon_warp_specialize", "sm80")
    call = f"tests/triton_hosts.py:{line_of('g_ring_sum(x_ptr, n_tiles, BLOCK, 2)', 'tests/triton_hosts.py')}"
    assert_python_error(proc, "RegionError", "region 'g_ring_sum'", call, "warp specialization", "sm90+", "hint:")


def test_declared_layout_for_another_warp_size():
    proc = run_case("takes_wave64", "sm90a")
    assert_python_error(proc, "RegionError", "region 'g_takes_wave64'", f"{BAD}:{line_of('REGION(tl.load(')}",
                        "the layout declared for 'x'", "64 threads per warp", "32-thread warps", "hint:")


def test_declared_layout_for_a_scalar():
    proc = run_case("takes_scalar", "sm90a")
    assert_python_error(proc, "RegionError", "region 'g_takes_scalar'", f"{BAD}:{line_of('g_takes_scalar(tl.load(')}",
                        "parameter 'n' declares a layout", "not a tensor", "hint:")


def test_declared_shared_layout_of_another_rank():
    proc = run_case("takes_rank", "sm90a")
    assert_python_error(proc, "RegionError", "region 'g_rank_mismatch'",
                        f"{BAD}:{line_of('g_rank_mismatch(tl.load(')}", "rank-1 layout", "rank-2 tensor", "hint:")


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_stage_with_a_reader_layout_of_another_rank(target):
    proc = run_case("stage_rank", target)
    assert_python_error(proc, "CompilationError", "region 't_load_tile'",
                        f"{BAD}:{line_of('hybrid.stage(t_load_tile(')}", "hybrid.stage", "has rank 1", "rank 2", "hint:")


def test_shared_handoff_in_a_layout_wgmma_cannot_read():
    """An LLVM abort upstream (warp_group_dot's result type cannot be inferred)."""
    proc = run_case("handoff_swizzled_wgmma", "sm90a")
    assert_python_error(proc, "RegionError", "region 'wgmma_tile'", "examples/mma_handoff.py:", "operand A",
                        "swizzled_shared", "NVMMASharedLayout")


@pytest.mark.slow
def test_gluon_kernel_with_an_op_of_another_architecture():
    proc = run_case("host_wrong_arch", "sm80")
    assert_python_error(proc, "TargetError", f"{BAD}:{line_of('in a Gluon host')} in k_hopper_op",
                        "fence_async_shared", "which sm80 does not have", "sm90+", "hint:")


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_shared_memory_over_the_target_limit_is_broken_down_by_region(target):
    proc = run_case("too_much_shared", target)
    assert_python_error(proc, "SharedMemoryError", "h_too_much_shared", "g_big_buffer (gluon",
                        f"{BAD}:{line_of('g_big_buffer(tl.load(')}", f"{512 * 256 * 4} B", "hint:")


def test_shared_memory_over_the_limit_is_broken_down_by_boundary():
    proc = run_case("big_handoff", "gfx942")
    assert_python_error(proc, "SharedMemoryError", "h_big_handoff", "has 65536 B", "g_two_shared_tiles (gluon",
                        f"r0 in x: {128 * 128 * 4} B (shared handoff)", f"r0 in y: {128 * 128 * 4} B (shared handoff)",
                        "hint:")


@pytest.mark.parametrize("target", ["gfx942", "sm90a/8"])
def test_layout_written_in_a_gluon_region_that_does_not_fit_the_target(target):
    """Wrong warp size (wave64) or wrong num_warps: named, with the region's call site, before lowering."""
    proc = run_case("gluon_inline_layout", target)
    assert_python_error(proc, "RegionError", "region 'g_inline_layout'", f"{BAD}:{line_of('REGION(tl.load(')}",
                        "does not verify for", f"{BAD}:{line_of('32-wide warps, 4 warps only')}", "hint:")


@pytest.mark.slow
def test_a_refusal_of_the_backend_names_the_region_the_line_and_the_arguments():
    """Triton's llir stage refuses a cp.async of 2-byte rows (the stride is not known to be a
    multiple of 16); upstream says ``PassManager::run failed``. The same kernel builds where the
    launch specializes the stride."""
    proc = run_case("misaligned_cp_async", "sm90a")
    assert_python_error(proc, "BackendError", "region 'g_staged_copy' (gluon) called at ",
                        f"{BAD}:{line_of('tile = g_staged_copy(')}: Triton's llir stage refused ",
                        f"{BAD}:{line_of('async_load(smem, ')}:",
                        "cp.async does not support transfers smaller than 4 bytes", "async_load(smem, gl.convert",
                        "not known to be multiples of 16 are: stride", "divisible=")
    assert run_case("aligned_cp_async", "sm90a").returncode == 0


def test_a_gluon_host_refused_by_the_backend_is_named_with_its_line():
    from examples import matmul_wgmma
    from interop.entry.backend_refusal import BackendError
    with pytest.raises(BackendError) as caught:
        hybrid.compile(matmul_wgmma.matmul_kernel, matmul_wgmma.SIGNATURE, matmul_wgmma.constexprs("sm90a"),
                       target="sm90a", num_warps=matmul_wgmma.NUM_WARPS)
    text = str(caught.value)
    assert text.startswith("kernel 'matmul_kernel': Triton's llir stage refused ")
    assert "examples/matmul_wgmma.py:" in text and "M, N, K, stride_am, stride_bk, stride_cm" in text
