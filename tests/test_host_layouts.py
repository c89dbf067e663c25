"""Triton regions follow the layouts their Gluon host gives them (issue #18): an elementwise
helper returns in the input's layout, a reduction in its slice, an activation on a ``tl.dot``
accumulator stays in the MMA layout, with no boundary conversion; the interpreter accepts the
same kernels; a mismatch with a region's result names the region."""
import re

import pytest
import triton

import hybrid
from hybrid import interpret
from hybrid.compiler import specialization
from interop.errors import RegionError
from interop.targets import TARGETS
from interop.triton.frontend import GluonASTSource
from tests import host_layout_kernels as k

torch = pytest.importorskip("torch")

PER_THREAD = (1, 2, 4, 8)
F32 = {"x_ptr": "*fp32", "y_ptr": "*fp32"}


def _no_boundary_conversions(fb) -> None:
    assert fb.boundaries and all(b.conversions == 0 for b in fb.boundaries), fb.boundaries
    assert "ttg.convert_layout" not in fb.asm["ttgir"]


def _code(text: str) -> list[str]:
    """Assembly without debug-info lines (the hybrid kernel's locations name the helper's file)."""
    return [line for line in text.splitlines() if not line.strip().startswith((".loc", ".file", "//", "$L__", ".section",
                                                                                 ".b8", ".b32", "Ltmp", ".Ltmp"))]


@pytest.mark.parametrize("target", list(TARGETS))
def test_elementwise_helper_compiles_as_upstream_does(target):
    """The issue's kernel: upstream Triton compiles it without ``@hybrid.jit``; with it, the
    helper keeps the host's layout and the machine code is upstream's."""
    constexprs = {"BLOCK": 2048, "L": k.vector(target, 1)}
    signature = {**F32, "n": "i32"}
    fb = hybrid.compile(k.hybrid_scale_kernel, signature, constexprs, target)
    _no_boundary_conversions(fb)
    full, attrs = specialization(k.scale_kernel, signature, constexprs)
    upstream = triton.compile(GluonASTSource(k.scale_kernel, full, constexprs, attrs), target=TARGETS[target],
                              options={"num_warps": 4})
    key = "ptx" if "ptx" in upstream.asm else "amdgcn"
    assert _code(fb.asm[key]) == _code(upstream.asm[key])


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("per_thread", PER_THREAD)
def test_elementwise_and_reducing_helpers_follow_the_host(target, per_thread):
    vec = hybrid.compile(k.hybrid_scale_kernel, {**F32, "n": "i32"}, {"BLOCK": 2048, "L": k.vector(target, per_thread)},
                         target)
    _no_boundary_conversions(vec)
    assert f"sizePerThread = [{per_thread}]" in vec.boundaries[1].to_layout
    norm = hybrid.compile(k.row_norm_kernel, F32, {"BM": 32, "BN": 64, "L": k.tile(target, per_thread)}, target)
    _no_boundary_conversions(norm)
    out = norm.boundaries[1]
    assert out.to_layout.startswith("#ttg.slice<{dim = 1") and f"sizePerThread = [1, {per_thread}]" in out.to_layout


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
@pytest.mark.parametrize("per_thread", PER_THREAD)
def test_the_interpreter_accepts_the_same_kernels(target, per_thread):
    x = torch.randn(3000)
    y = torch.full_like(x, float("nan"))
    with hybrid.interpreting(target):
        k.hybrid_scale_kernel[(2, )](x, y, x.numel(), BLOCK=2048, L=k.vector(target, per_thread))
    torch.testing.assert_close(y, 2 * x)
    x = torch.randn(32, 64)
    y = torch.full((32, ), float("nan"))
    with hybrid.interpreting(target):
        k.row_norm_kernel[(1, )](x, y, BM=32, BN=64, L=k.tile(target, per_thread))
    torch.testing.assert_close(y, x.norm(dim=1))


@pytest.mark.parametrize("target", list(TARGETS))
def test_interpreter_runs_the_issue_kernel_on_every_target(target):
    x = torch.randn(2048)
    y = torch.full_like(x, float("nan"))
    interpret.launch(k.hybrid_scale_kernel, (1, ), x, y, x.numel(), BLOCK=2048, L=k.vector(target, 1), target=target)
    torch.testing.assert_close(y, 2 * x)


@pytest.mark.parametrize("target", list(TARGETS))
def test_activation_on_an_mma_accumulator_stays_in_the_mma_layout(target):
    fb = hybrid.compile(k.epilogue_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                        {"BM": 64, "BN": 64, "BK": 32, "L": k.tile(target, 4)}, target)
    relu_in, relu_out = [b for b in fb.boundaries if b.function == "relu"]
    dot_out = next(b for b in fb.boundaries if b.function == "tile_dot")
    assert relu_in.from_layout == relu_in.to_layout == dot_out.to_layout == relu_out.to_layout
    assert not relu_out.to_layout.startswith("#ttg.blocked"), relu_out.to_layout   # mma, mfma, tcgen05's tmem load
    assert all(b.conversions == 0 for b in fb.boundaries), fb.boundaries
    (conversion, ) = re.findall(r"ttg\.convert_layout .*", fb.asm["ttgir"])   # the host's own, to its store layout
    assert "-> tensor<64x64xf32, #blocked" in conversion


def test_a_mismatch_with_a_region_result_names_the_region():
    with pytest.raises(triton.CompilationError) as info:
        hybrid.compile(k.mismatched_kernel, F32, {"BM": 32, "BN": 64, "L": k.tile("sm90a", 4),
                                                  "L1": k.vector("sm90a", 1)}, "sm90a")
    text = str(info.value)
    assert re.search(r"region 'row_norm' called at .*host_layout_kernels\.py:\d+: its result return\[0\] comes back "
                     r"in SliceLayout\(dim=1, parent=BlockedLayout\(size_per_thread=\[1, 4\]", text), text
    assert re.search(r"meets a value in BlockedLayout\(size_per_thread=\[1\].* at .*host_layout_kernels\.py:\d+", text)
    assert "gl.convert_layout(<result>, BlockedLayout(size_per_thread=[1]" in text
    assert isinstance(info.value, RegionError) or isinstance(info.value.__cause__, RegionError)
