"""The launch path ``kernel[grid](...)`` compiles through region stitching, without a GPU.

``warmup`` is upstream's JIT ``run`` minus the launch: binding, specialization, caching and
compilation. A stand-in driver names the target, so this runs on the CPU for each backend.
"""
import pytest
import triton
import triton.language as tl
from triton.runtime import driver

import hybrid
from examples import softmax
from interop.targets import TARGETS
from interop.records import decode
from tests.kernels import vec_1d
from tests.triton_hosts import g_add_one

pytestmark = pytest.mark.version


class TargetOnlyDriver:
    """Just enough of a driver for the JIT to pick a target and a device."""

    def __init__(self, name: str):
        self.name = name

    def get_current_target(self):
        return TARGETS[self.name]

    def get_current_device(self):
        return f"stand-in {self.name}"   # the JIT caches binders per device: one per target

    def get_current_stream(self, device=None):
        return 0


class Pointer:
    """An argument the JIT specializes as a 16-byte aligned ``*dtype`` pointer."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def data_ptr(self) -> int:
        return 1 << 20


@pytest.fixture
def jit_target(request):
    previous = driver._active   # reset_active() would build the real driver, which needs a GPU
    driver.set_active(TargetOnlyDriver(request.param))
    try:
        yield request.param
    finally:
        driver._active = previous


@pytest.mark.parametrize("jit_target", ["sm90a", "gfx942"], indirect=True)
def test_launch_path_compiles_the_fused_kernel(jit_target):
    if jit_target.startswith("gfx"):
        pytest.importorskip("torch", reason="Triton's AMD argument specialization imports torch")
    compiled = softmax.softmax_kernel.warmup(Pointer("fp32"), Pointer("fp32"), 1000, 97, 97, grid=(1, ),
                                             num_warps=softmax.NUM_WARPS, **softmax.constexprs(jit_target))
    ttgir = compiled.asm["ttgir"]
    assert [r.function for r in decode(ttgir).regions] == ["row_stats"]   # stitched by HybridGluonSource, not plain Gluon
    assert ttgir.count("tt.func public") == 1 and "tt.call" not in ttgir
    assert "tt.divisibility = 16" in ttgir                        # upstream's specialization of the pointers


@pytest.mark.parametrize("jit_target", list(TARGETS), indirect=True)
def test_an_ahead_of_time_build_is_the_kernel_a_launch_gets(jit_target):
    """``hybrid.compile`` with no options takes the backend's own defaults, as the JIT does (AMD
    pipelines 2 stages, NVIDIA 3): the binary is the one a launch with the same arguments builds."""
    if jit_target.startswith("gfx"):
        pytest.importorskip("torch", reason="Triton's AMD argument specialization imports torch")
    from examples import tile_matmul
    sizes = (1000, 1000, 1000, 1000, 1000, 1000)   # neither 1 nor a multiple of 16: not specialized
    launched = tile_matmul.matmul_kernel.warmup(Pointer("fp16"), Pointer("fp16"), Pointer("fp16"), *sizes, grid=(1, ),
                                                **tile_matmul.constexprs(jit_target))
    built = hybrid.compile(tile_matmul.matmul_kernel, tile_matmul.SIGNATURE, tile_matmul.constexprs(jit_target),
                           target=jit_target)
    assert built.metadata["num_stages"] == launched.metadata.num_stages == (2 if jit_target.startswith("gfx") else 3)
    assert built.metadata["shared"] == launched.metadata.shared
    assert built.binary == launched.asm["cubin" if "cubin" in launched.asm else "hsaco"]


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512})], key=["n"])
@triton.jit
def autotuned_add_one(x_ptr, n, BLOCK: tl.constexpr, L1: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, g_add_one(tl.load(x_ptr + offs, mask=offs < n), L1), mask=offs < n)


@pytest.mark.parametrize("jit_target", ["sm90a"], indirect=True)
def test_hybrid_jit_on_a_library_kernel_already_autotuned(jit_target):
    """``hybrid.jit(lib.kernel)`` on an autotuned kernel makes the JIT function inside hybrid and
    keeps the autotuner: every config compiles through stitching, into one kernel entry."""
    kernel = hybrid.jit(autotuned_add_one)
    assert kernel is autotuned_add_one and type(kernel.fn).__name__ == "HybridTritonJITFunction"
    assert hybrid.jit(kernel) is kernel   # a second application keeps the compiled kernels
    compiled = kernel.warmup(Pointer("fp32"), 1000, grid=(1, ), L1=vec_1d(jit_target))
    assert len(compiled) == 2
    for binary, block in zip(compiled, (256, 512)):
        ttgir = binary.asm["ttgir"]
        assert [r.function for r in decode(ttgir).regions] == ["g_add_one"] and "tt.call" not in ttgir
        assert f"tensor<{block}xf32" in ttgir


def test_hybrid_jit_on_something_else_says_what_it_takes():
    with pytest.raises(TypeError, match="@triton.autotune.*not function.*@hybrid.jit above @gluon.jit"):
        hybrid.jit(lambda: None)
