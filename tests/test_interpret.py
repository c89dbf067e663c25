"""The interpreter (``hybrid/interpret/``): mixed kernels and Gluon tutorial patterns on the CPU."""
import importlib
import time

import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
from hybrid import interpret  # noqa: E402
from bench.kernels import SUITE  # noqa: E402
from examples import softmax  # noqa: E402
from examples.run import check  # noqa: E402
from interop.errors import LayoutError, TargetError  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.amd import cdna3  # noqa: E402

from tests import interp_kernels as k  # noqa: E402
from tests.kernels import t_arange_load  # noqa: E402

pytestmark = pytest.mark.version


def _blocked_1d(warp_size=32, num_warps=4, vec=4):
    return gl.BlockedLayout([vec], [warp_size], [num_warps], [0])


@pytest.mark.slow
@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
@pytest.mark.parametrize("name", SUITE)
def test_every_example_matches_torch_in_the_interpreter(name, target):
    example = importlib.import_module(f"examples.{name}")
    if target in getattr(example, "SKIP", {}):
        pytest.skip(example.SKIP[target])
    assert check(example, target, interpreted=True) <= example.TOLERANCE   # every case, fresh inputs


def test_environment_variable_switches_launches_to_the_interpreter(monkeypatch):
    monkeypatch.setenv("HYBRID_INTERPRET", "1")
    monkeypatch.setenv("HYBRID_INTERPRET_TARGET", "sm80")
    assert interpret.enabled() and interpret.default_target() == "sm80"
    p = softmax.problem(64, 33, device="cpu")
    out = softmax.run("hybrid", p, "sm80")
    assert softmax.error(out, p) <= softmax.TOLERANCE
    monkeypatch.setenv("HYBRID_INTERPRET", "0")
    assert not interpret.enabled()


def test_memcpy_with_explicit_layout():
    x = torch.randn(1000)
    y = torch.full_like(x, float("nan"))
    interpret.launch(k.memcpy_kernel, (4, ), x, y, x.numel(), BLOCK=256, L=_blocked_1d(), target="sm90a")
    assert torch.equal(x, y)


def test_transposed_layout_lesson():
    x = torch.randn(70, 50)
    y = torch.full((50, 70), float("nan"))
    load = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    store = gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])
    interpret.launch(k.transpose_kernel, (3, 2), x, y, 70, 50, x.stride(0), y.stride(0), BM=32, BN=32, LOAD=load,
                     STORE=store, target="sm90a")
    assert torch.equal(y, x.T)


def test_cp_async_into_shared_memory():
    x = torch.randn(256)
    y = torch.zeros(256)
    interpret.launch(k.cp_async_kernel, (1, ), x, y, BLOCK=128, L=_blocked_1d(vec=1),
                     S=gl.SwizzledSharedLayout(1, 1, 1, [0]), target="sm80")
    assert torch.equal(y, 2 * x)


def _tma_descriptors(x, y, block):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    layout = gl.NVMMASharedLayout.get_default_for(block, gl.float32)
    return (TensorDescriptor.from_tensor(x, block, layout), TensorDescriptor.from_tensor(y, block, layout))


def test_tma_load_and_store_with_an_mbarrier():
    x = torch.randn(100, 32)          # the last tile is partial: TMA pads reads, clips writes
    y = torch.full_like(x, float("nan"))
    din, dout = _tma_descriptors(x, y, [64, 32])
    interpret.launch(k.tma_kernel, (2, ), din, dout, BM=64, BN=32, L=gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]),
                     target="sm90a")
    assert torch.equal(y, x + 1)


def test_tma_on_sm80_names_the_op_and_the_line():
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    din, dout = _tma_descriptors(x, y, [64, 32])
    with pytest.raises(TargetError, match=r"interp_kernels.py:\d+ in tma_kernel: .*(TMA|expect|async-proxy).*"
                                          r"sm80 does not have.*sm90\+"):
        interpret.launch(k.tma_kernel, (1, ), din, dout, BM=64, BN=32,
                         L=gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), target="sm80")


def _wgmma_args(M=64, N=32, K=32):
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = torch.full((M, N), float("nan"))
    layouts = dict(L=gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]),
                   SA=gl.NVMMASharedLayout.get_default_for([M, K], gl.float16),
                   SB=gl.NVMMASharedLayout.get_default_for([K, N], gl.float16),
                   ACC=gl.NVMMADistributedLayout([3, 0], [4, 1], [16, N]))
    return a, b, c, dict(M=M, N=N, K=K, **layouts)


def test_warpgroup_mma_computes_the_product():
    a, b, c, constexprs = _wgmma_args()
    interpret.launch(k.wgmma_kernel, (1, ), a, b, c, **constexprs, target="sm90a")
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)


def test_hopper_op_on_sm80_is_a_target_error_and_its_layouts_fail_on_amd():
    a, b, c, constexprs = _wgmma_args()
    with pytest.raises(TargetError, match=r"interp_kernels.py:\d+.*(wgmma|async-proxy).*sm90\+"):
        interpret.launch(k.wgmma_kernel, (1, ), a, b, c, **constexprs, target="sm80")
    with pytest.raises(LayoutError, match=r"interp_kernels.py:\d+.*gfx942 runs 64-thread warps"):
        interpret.launch(k.wgmma_kernel, (1, ), a, b, c, **constexprs, target="gfx942")


def test_a_triton_result_used_in_gluon_without_conversion_names_its_marker_layout():
    """A region that loads (a layout anchor of its own) returns a layout only the compiler knows."""
    from triton.experimental import gluon

    @gluon.jit
    def unconverted(x_ptr, y_ptr, BN: gl.constexpr, L: gl.constexpr):
        cols = gl.arange(0, BN, layout=L)
        gl.store(y_ptr + cols, t_arange_load(x_ptr, BN, BN))   # the load's layout, which Triton chose

    x = torch.randn(128)
    with pytest.raises(interpret.InterpretError, match=r"test_interpret.py:\d+.*RegionLayout\(the layout triton "
                                                       r"region 't_arange_load' returned"):
        interpret.launch(unconverted, (1, ), x, torch.zeros_like(x), BN=128, L=_blocked_1d(vec=1), target="sm90a")


def test_a_triton_result_without_anchors_keeps_the_hosts_layout():
    """Row statistics computed in the host's layout come back in its slices, as compiled."""
    from triton.experimental import gluon

    @gluon.jit
    def unconverted(x_ptr, y_ptr, n_cols, BN: gl.constexpr, L: gl.constexpr):
        rows = gl.arange(0, 16, layout=gl.SliceLayout(1, L))
        cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
        offsets = rows[:, None] * BN + cols[None, :]
        x = gl.load(x_ptr + offsets)
        m, s = softmax.row_stats(x, n_cols, BN)
        gl.store(y_ptr + offsets, x - m[:, None])

    x = torch.randn(16, 128)
    y = torch.zeros_like(x)
    interpret.launch(unconverted, (1, ), x, y, 128, BN=128, L=softmax.constexprs("sm90a")["L"], target="sm90a")
    assert torch.equal(y, x - x.max(dim=1, keepdim=True).values)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_warp_specialized_pipeline_runs(stages):
    """Several ring depths: the partitions interleave differently, none may be taken for a deadlock."""
    x = torch.randn(8 * 128)
    y = torch.zeros(128)
    interpret.launch(k.pipeline_kernel, (1, ), x, y, 8, BLOCK=128, STAGES=stages, ARRIVE=True, target="sm100a")
    torch.testing.assert_close(y, x.view(8, 128).sum(0))


def test_missing_arrive_is_reported_as_a_deadlock_quickly():
    x, y = torch.randn(8 * 128), torch.zeros(128)
    start = time.monotonic()
    with pytest.raises(interpret.DeadlockError) as info:
        interpret.launch(k.pipeline_kernel, (1, ), x, y, 8, BLOCK=128, STAGES=2, ARRIVE=False, target="sm100a")
    assert time.monotonic() - start < 10
    text = str(info.value)
    assert "deadlock" in text and "_consumer" in text and "_producer" in text and "interp_kernels.py" in text


def test_persistent_grid():
    x = torch.randn(10 * 64)
    y = torch.zeros_like(x)
    interpret.launch(k.persistent_kernel, (3, ), x, y, 10, BLOCK=64, L=_blocked_1d(warp_size=64, vec=2), target="gfx942")
    assert torch.equal(y, 2 * x)


def test_layout_for_the_wrong_warp_size_names_the_line():
    x, y = torch.randn(256), torch.zeros(256)
    with pytest.raises(LayoutError, match=r"interp_kernels.py:\d+.*32 threads per warp.*gfx942 runs 64"):
        interpret.launch(k.memcpy_kernel, (1, ), x, y, 256, BLOCK=256, L=_blocked_1d(), target="gfx942")


def test_layout_for_the_wrong_warp_count():
    x, y = torch.randn(256), torch.zeros(256)
    with pytest.raises(LayoutError, match="num_warps=8"):
        interpret.launch(k.memcpy_kernel, (1, ), x, y, 256, BLOCK=256, L=_blocked_1d(), num_warps=8, target="sm90a")


def test_tcgen05_mma_into_tensor_memory():
    M, N, K = 128, 64, 32
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = torch.full((M, N), float("nan"))
    interpret.launch(k.tcgen05_kernel, (1, ), a, b, c, M=M, N=N, K=K, L=gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]),
                     SA=gl.NVMMASharedLayout.get_default_for([M, K], gl.float16),
                     SB=gl.NVMMASharedLayout.get_default_for([K, N], gl.float16),
                     REG=gl.BlockedLayout([1, N], [32, 1], [4, 1], [0, 1]), target="sm100a")
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-3, rtol=1e-3)


def test_an_op_the_interpreter_does_not_model_is_named_with_its_line():
    from triton.experimental import gluon

    @gluon.jit
    def reshaped_view(x_ptr, L: gl.constexpr):
        smem = gl.allocate_shared_memory(gl.float32, [16, 8], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
        flat = smem.permute([1, 0]).reshape([128])
        gl.store(x_ptr + gl.arange(0, 128, layout=L), flat.load(L))

    x = torch.zeros(128)
    with pytest.raises(interpret.UnsupportedOpError, match=r"reshape.*test_interpret.py:\d+"):
        interpret.launch(reshaped_view, (1, ), x, L=_blocked_1d(vec=1), target="sm90a")


def test_a_conversion_asserted_trivial_is_checked_as_the_compiler_checks_it():
    """``gl.convert_layout(x, M, assert_trivial=True)`` runs where Triton's own check says the
    conversion moves nothing, and is refused, as the compiler refuses it, where it would."""
    from triton.experimental import gluon

    @gluon.jit
    def converted(x_ptr, y_ptr, L: gl.constexpr, M: gl.constexpr):
        x = gl.load(x_ptr + gl.arange(0, 128, layout=L))
        gl.store(y_ptr + gl.arange(0, 128, layout=M), gl.convert_layout(x, M, assert_trivial=True))

    x, y = torch.randn(128), torch.zeros(128)
    interpret.launch(converted, (1, ), x, y, L=_blocked_1d(vec=1), M=_blocked_1d(vec=1), target="sm90a")
    assert torch.equal(y, x)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    moved = {"L": _blocked_1d(vec=1), "M": _blocked_1d(vec=4)}
    with pytest.raises(Exception, match="is not trivial") as compiled:
        hybrid.compile(hybrid.jit(converted), signature, moved, "sm90a", num_warps=4)
    with pytest.raises(Exception, match="is not trivial") as interpreted:
        interpret.launch(converted, (1, ), x, y, **moved, target="sm90a")
    assert "test_interpret.py" in str(interpreted.value), (compiled.value, interpreted.value)


def test_a_parameter_named_like_a_launch_option_is_both_as_in_tritons_jit():
    """Triton's JIT binds ``num_warps=8`` to a kernel parameter of that name and launches with 8 warps."""
    from triton.experimental import gluon

    @gluon.jit
    def warps(y_ptr, num_warps: gl.constexpr):
        offs = gl.arange(0, 2, layout=gl.BlockedLayout([1], [32], [num_warps], [0]))
        gl.store(y_ptr + offs, gl.where(offs == 0, num_warps, gl.num_warps()))

    y = torch.zeros(2, dtype=torch.int32)
    interpret.launch(warps, (1, ), y, num_warps=8, target="sm90a")
    assert y.tolist() == [8, 8]


def _autotuned_block_writer():
    """Writes each element's program id times ``BLOCK``: what it writes depends on the config."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
    @triton.jit
    def blocks(y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, offs - offs % BLOCK, mask=offs < n)
    return blocks


def test_an_autotuned_kernel_runs_its_first_config(monkeypatch):
    import triton
    monkeypatch.delenv("HYBRID_INTERPRET_ALL_CONFIGS", raising=False)
    y = torch.full((100, ), -1, dtype=torch.int32)
    interpret.launch(_autotuned_block_writer(), lambda meta: (triton.cdiv(100, meta["BLOCK"]), ), y, 100,
                     target="gfx942")
    assert torch.equal(y, torch.arange(100, dtype=torch.int32) // 32 * 32)


def test_every_config_must_write_what_the_first_wrote(monkeypatch):
    import triton
    monkeypatch.setenv("HYBRID_INTERPRET_ALL_CONFIGS", "1")
    y = torch.full((100, ), -1, dtype=torch.int32)
    with pytest.raises(interpret.InterpretError, match=r"BLOCK: 64.* writes y_ptr differently from config BLOCK: 32"):
        interpret.launch(_autotuned_block_writer(), lambda meta: (triton.cdiv(100, meta["BLOCK"]), ), y, 100,
                         target="sm90a")


def test_every_config_of_a_correct_kernel_runs_from_the_same_inputs(monkeypatch):
    """In-place y += 1 under two configs: each starts from the inputs, so y ends one higher, not two."""
    import triton
    import triton.language as tl

    runs = []

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}, pre_hook=lambda args: runs.append(32)),
                              triton.Config({"BLOCK": 128}, pre_hook=lambda args: runs.append(128))], key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def increment(y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(y_ptr + offs, tl.load(y_ptr + offs) + 1)
        else:
            tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    monkeypatch.setenv("HYBRID_INTERPRET_ALL_CONFIGS", "1")
    y = torch.arange(96, dtype=torch.float32)
    interpret.launch(increment, lambda meta: (triton.cdiv(96, meta["BLOCK"]), ), y, 96, target="sm80")
    assert runs == [32, 128]
    assert torch.equal(y, torch.arange(96, dtype=torch.float32) + 1)


def test_an_amd_buffer_atomic_is_named_as_unsupported_with_the_builtin_and_line():
    """Never a silent result: the builder step and the Gluon builtin the kernel called, at its line."""
    from triton.experimental import gluon

    @gluon.jit
    def buffer_add(x_ptr, y_ptr, L: gl.constexpr):
        offs = gl.arange(0, 128, layout=L)
        cdna3.buffer_atomic_add(y_ptr, offs, cdna3.buffer_load(x_ptr, offs))

    x = torch.randn(128)
    with pytest.raises(interpret.UnsupportedOpError, match=r"cannot run buffer_atomic_rmw in "
                                                           r"amd\.cdna3\.buffer_atomic_add "
                                                           r"\(at .*test_interpret.py:\d+ in buffer_add\)"):
        interpret.launch(buffer_add, (1, ), x, torch.zeros_like(x), L=_blocked_1d(warp_size=64, vec=1),
                         target="gfx942")
