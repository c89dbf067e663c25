"""A Gluon host's TMA descriptor passed into a Triton region (sm90a): built on every Triton from
3.6 (3.6 and 3.7 take it without its layout and lay it out as Triton's passes do), run by the
interpreter, and refused alike by both, naming the descriptor, where the host made it in another
shared layout than Triton lays the region's loads out in (the stitched kernel would not verify)."""
import pytest
import torch

import hybrid
from interop.errors import RegionError
from tests import host_descriptor_kernels as k

pytestmark = pytest.mark.version

LINE = k.tile_sums.fn.__code__.co_firstlineno + 4   # the call of tile_sum (after two decorators)
CONSTEXPRS = {"BM": k.BM, "BN": k.BN}


def _launch(layout, x, out):
    with hybrid.interpreting("sm90a"):
        k.tile_sums[(2, )](x, out, 128, 64, **CONSTEXPRS, LAYOUT=layout, num_warps=4)


def test_a_host_descriptor_in_the_layout_triton_chooses_builds_and_runs():
    built = hybrid.compile(k.tile_sums, k.SIGNATURE, {**CONSTEXPRS, "LAYOUT": k.DEFAULT}, "sm90a", num_warps=4,
                           divisible=("M", "N"))
    assert "ttng.async_tma_copy_global_to_local" in built.asm["ttgir"] and built.metadata.shared > 0
    x, out = torch.randn(128, 64).half(), torch.zeros(2)
    _launch(k.DEFAULT, x, out)
    torch.testing.assert_close(out, x.float().view(2, 64, 64).sum((1, 2)))


def test_a_host_descriptor_in_another_layout_is_refused_alike():
    with pytest.raises(RegionError) as compiled:
        hybrid.compile(k.tile_sums, k.SIGNATURE, {**CONSTEXPRS, "LAYOUT": k.ODD}, "sm90a", num_warps=4,
                       divisible=("M", "N"))
    with pytest.raises(RegionError) as interpreted:
        _launch(k.ODD, torch.randn(128, 64).half(), torch.zeros(2))
    for caught in (compiled, interpreted):
        text = str(caught.value)
        assert "the Gluon host's TMA descriptor 'desc' is " in text and "Triton lays the region's use of it" in text
        assert f"host_descriptor_kernels.py:{LINE}" in text and "get_default_for(block_shape, dtype)" in text
    assert "swizzlingByteWidth = 64" in str(compiled.value) and "swizzle_byte_width=64" in str(interpreted.value)
    assert compiled.value.function == interpreted.value.function == "tile_sum"
