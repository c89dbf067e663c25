"""Where the interpreter and the compiler used to part: each case here both build and compute,
or both refuse with the same error."""
import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
from hybrid import interpret  # noqa: E402
from interop.errors import LayoutError  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from tests import interp_kernels as k  # noqa: E402

L = gl.BlockedLayout([1], [32], [4], [0])


def test_shared_memory_slice_runs_in_the_interpreter_and_compiles():
    x, y = torch.randn(128), torch.zeros(128)
    interpret.launch(k.slice_kernel, (1, ), x, y, BLOCK=128, L=L, target="sm90a")
    assert torch.equal(y, 2 * x)
    fb = hybrid.compile(hybrid.jit(k.slice_kernel), {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 128, "L": L},
                        target="sm90a")
    assert fb.kernel_entries == 1


@pytest.mark.parametrize("layout", [gl.BlockedLayout([3], [32], [4], [0]), gl.BlockedLayout([1], [32], [3], [0])])
def test_a_layout_that_is_not_a_power_of_two_is_refused_by_both(layout):
    with pytest.raises(LayoutError) as interpreted:
        interpret.launch(k.memcpy_kernel, (1, ), torch.zeros(128), torch.zeros(128), 128, BLOCK=128, L=layout,
                         target="sm90a")
    with pytest.raises(LayoutError) as compiled:
        hybrid.compile(hybrid.jit(k.memcpy_kernel), {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 128, "L": layout}, target="sm90a", num_warps=4)
    for error in (interpreted.value, compiled.value):
        assert "not a power of two" in str(error) and "3" in str(error)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_triton_region_on_a_one_element_tile_compiles(target):
    """Triton's canonicalizer makes an elementwise op on a 1-element tile scalar; the region's
    input then takes the host tile's one element (it aborted in LLVM's cast<RankedTensorType>)."""
    from tests.kernels import k_agree, k_void_region
    layout = gl.BlockedLayout([1], [64 if target == "gfx942" else 32], [4], [0])
    for kernel in (k_agree, k_void_region):
        fb = hybrid.compile(kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 1, "L1": layout}, target=target)
        assert fb.kernel_entries == 1 and len(fb.regions) == 1
    x, y = torch.randn(1), torch.zeros(1)
    interpret.launch(k_agree, (1, ), x, y, BLOCK=1, L1=layout, target=target)
    assert torch.equal(y, 2 * x)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_amd_buffer_load_and_store_run_and_compile(target):
    layout = gl.BlockedLayout([1], [64], [4], [0])
    x, y = torch.randn(300), torch.full((300, ), float("nan"))
    interpret.launch(k.buffer_copy_kernel, (2, ), x, y, 300, BLOCK=256, L=layout, target=target)
    assert torch.equal(y, 3 * x)
    fb = hybrid.compile(hybrid.jit(k.buffer_copy_kernel), {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 256, "L": layout}, target=target)
    assert fb.kernel_entries == 1 and "buffer_load" in fb.assembly and "buffer_store" in fb.assembly


@pytest.mark.parametrize("name", ["void_region_assigned", "void_region_passed"])
def test_the_result_of_a_void_triton_region_used_as_a_value_is_one_region_error(name):
    from interop.errors import RegionError
    from tests import bad_kernels
    kernel = getattr(bad_kernels, name)
    with pytest.raises(RegionError) as compiled:
        hybrid.compile(kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 128, "L1": L}, target="sm90a")
    with pytest.raises(RegionError) as interpreted:
        interpret.launch(kernel, (1, ), torch.randn(128), torch.zeros(128), BLOCK=128, L1=L, target="sm90a")
    assert str(compiled.value) == str(interpreted.value)
    assert "region 't_store_block' called at" in str(compiled.value) and "returns nothing" in str(compiled.value)


@pytest.mark.parametrize("n", [0, 5])
def test_a_splat_comparison_is_a_mask_in_both(n):
    """A comparison is an i1: splat (``gl.full(shape, n > 0, gl.int1)``), it masks a load."""
    x, y = torch.randn(128), torch.full((128, ), 7.0)
    interpret.launch(k.splat_mask_kernel, (1, ), x, y, n, BLOCK=128, L=L, target="sm90a")
    assert torch.equal(y, x if n > 0 else torch.zeros(128))
    fb = hybrid.compile(hybrid.jit(k.splat_mask_kernel), {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 128, "L": L}, target="sm90a", num_warps=4)
    assert fb.kernel_entries == 1


@pytest.mark.slow
def test_tl_rand_draws_what_upstreams_interpreter_draws():
    """Triton's Philox (``tl.rand``, ``tl.randint``) loops with ``tl.static_range`` in library code
    that reaches the language as ``triton.language.core``: it runs, and draws what Triton's own
    interpreter (``TRITON_INTERPRET=1``, in a process of its own) draws for the same seed."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    out = torch.zeros(2 * 256)
    with hybrid.interpreting(target="sm80"):
        hybrid.jit(k.rand_kernel)[(2, )](out, 1234, BLOCK=256, num_warps=4)
    script = ("import json, torch, triton\nfrom tests import interp_kernels as k\nout = torch.zeros(512)\n"
              "k.rand_kernel[(2, )](out, 1234, BLOCK=256)\nprint(json.dumps(out.tolist()))\n")
    upstream = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parent.parent, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert upstream.returncode == 0, upstream.stderr
    assert torch.equal(out, torch.tensor(json.loads(upstream.stdout.strip().splitlines()[-1])))
    assert len(set(out.tolist())) > 500   # draws, not a constant
