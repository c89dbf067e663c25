"""A helper its kernel calls on a row and on a square tile (a decay ``exp2(g)`` broadcast over rows,
then ``exp2(g[:, None] - g[None, :])``, in a branch a constexpr turns on): the sites' ranks tell
them apart, which is what picks each site's port. Their layouts cannot: a Triton kernel's call of
a Gluon function is traced first in a default layout (tests/test_port_sites.py has the rest)."""
import torch
import triton
import triton.language as tl

from hybrid.port import compare, from_ttgir

SIGNATURE = {"o_ptr": "*fp32", "a_ptr": "*fp32", "g_ptr": "*fp32"}


@triton.jit
def _exp2_f32(x):
    return tl.math.exp2(x.to(tl.float32))


@triton.jit
def _decayed(o_ptr, a_ptr, g_ptr, BT: tl.constexpr, USE_G: tl.constexpr):
    r = tl.arange(0, BT)
    tile = r[:, None] * BT + r[None, :]
    o, a = tl.load(o_ptr + tile), tl.load(a_ptr + tile)
    if USE_G:
        g = tl.load(g_ptr + r)
        o = o * _exp2_f32(g)[:, None]
        a = a * _exp2_f32(g[:, None] - g[None, :])
    tl.store(o_ptr + tile, o + a)


def test_a_helper_called_on_a_row_and_on_a_tile_is_ported_per_site_by_rank(tmp_path):
    constexprs = {"BT": 16, "USE_G": True}
    ported = from_ttgir.port(_decayed, _exp2_f32, SIGNATURE, constexprs, "sm90a", num_warps=4)
    name = ported.name
    assert "x: tensor<16xf32" in ported.sites[0] and "x: tensor<16x16xf32" in ported.sites[1]
    assert f"    if (len(x.shape) == 1):\n        return {name}_0(x)" in ported.source
    assert f"    elif (len(x.shape) == 2):\n        return {name}_1(x)" in ported.source
    candidate = from_ttgir.load_port(ported.source, name, tmp_path / f"{name}.py")
    o, a, g = torch.randn(16, 16), torch.randn(16, 16), -torch.rand(16).cumsum(0)
    result = compare(_decayed, region=_exp2_f32, candidate=candidate, grid=(1, ), args=(o, a, g),
                     kwargs={**constexprs, "num_warps": 4}, interpret=True, target="sm90a", machine_code_report=False)
    assert result.ok and result.site_runs == {f"{name}_0": 1, f"{name}_1": 1}, result.report()

