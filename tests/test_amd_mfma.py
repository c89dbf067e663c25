"""``hybrid.amd.mfma``: Gluon's AMD MFMA at an input precision. At tf32 on gfx942 it is the xf32
MFMA Triton's ``tl.dot`` of f32 gets there (Gluon's own ``mfma`` builds the IEEE one); the
interpreter multiplies as for a ``tl.dot``; a precision the target lacks, and an NVIDIA target,
are refused at the call."""
import pytest
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.errors import TargetError

SIGNATURE = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}


@gluon.jit
def _tile_mfma(a_ptr, b_ptr, c_ptr, PRECISION: gl.constexpr):
    L: gl.constexpr = gl.amd.AMDMFMALayout(3, [32, 32, 4], True, [4, 1])
    tile = gl.arange(0, 32, gl.SliceLayout(1, L))[:, None] * 32 + gl.arange(0, 32, gl.SliceLayout(0, L))[None, :]
    a = gl.convert_layout(gl.load(a_ptr + tile), gl.DotOperandLayout(0, L, 2))
    b = gl.convert_layout(gl.load(b_ptr + tile), gl.DotOperandLayout(1, L, 2))
    gl.store(c_ptr + tile, hybrid.amd.mfma(a, b, gl.zeros([32, 32], gl.float32, L), input_precision=PRECISION))


def _mfmas(precision: str, target: str = "gfx942") -> set[str]:
    built = hybrid.compile(hybrid.jit(_tile_mfma), SIGNATURE, {"PRECISION": precision}, target, num_warps=4)
    return {word for word in built.asm["amdgcn"].split() if word.startswith("v_mfma")}


def test_tf32_is_the_xf32_mfma():
    assert _mfmas("tf32") == {"v_mfma_f32_32x32x4_xf32"}


def test_the_interpreter_multiplies_the_tiles():
    a, b, c = torch.randn(32, 32), torch.randn(32, 32), torch.zeros(32, 32)
    with hybrid.interpreting(target="gfx942"):
        hybrid.jit(_tile_mfma)[(1, )](a, b, c, PRECISION="tf32", num_warps=4)
    torch.testing.assert_close(c, a @ b)


def test_a_precision_the_target_lacks_and_an_nvidia_target_are_refused_at_the_call():
    with pytest.raises(Exception, match=r"input_precision 'tf32' is not one this target builds; it takes .*'ieee'"):
        _mfmas("tf32", "gfx950")
    with pytest.raises(TargetError, match=r"test_amd_mfma\.py:\d+.*hybrid\.amd\.mfma is AMD MFMA, which sm90a does not"):
        hybrid.compile(hybrid.jit(_tile_mfma), SIGNATURE, {"PRECISION": "tf32"}, "sm90a", num_warps=4)
