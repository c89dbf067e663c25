"""``hybrid.convert_in``: a Gluon function's tensor argument in the layout it needs, made there
where its caller made it from a splat constant or index arithmetic (as a region's boundary does),
converted otherwise; a plain ``gl.convert_layout`` outside a Gluon kernel built by hybrid."""
import re

import pytest
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.targets import TARGETS
from interop.triton.frontend import GluonASTSource

N = 512


@gluon.jit
def scaled_sum(acc, ptrs, x, L: gl.constexpr, MARKED: gl.constexpr):
    """``acc + 2 * x + load(ptrs)``, computed in ``L``."""
    if MARKED:
        acc = hybrid.convert_in(acc, L)
        ptrs = hybrid.convert_in(ptrs, L)
        x = hybrid.convert_in(x, L)
    else:
        acc = gl.convert_layout(acc, L)
        ptrs = gl.convert_layout(ptrs, L)
        x = gl.convert_layout(x, L)
    return acc + 2.0 * x + gl.load(ptrs)


@gluon.jit
def caller(x_ptr, y_ptr, out_ptr, N: gl.constexpr, A: gl.constexpr, L: gl.constexpr, MARKED: gl.constexpr):
    offs = gl.arange(0, N, layout=A)
    acc = gl.full([N], 1.5, gl.float32, layout=A)
    out = scaled_sum(acc, y_ptr + offs, gl.load(x_ptr + offs), L, MARKED)
    gl.store(out_ptr + gl.arange(0, N, layout=L), out)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}


def _constexprs(marked: bool, target: str = "sm90a") -> dict:
    """The caller's layout one element per thread, the function's two."""
    lanes = TARGETS[target].warp_size
    return {"N": N, "A": gl.BlockedLayout([1], [lanes], [4], [0]), "L": gl.BlockedLayout([2], [lanes], [4], [0]),
            "MARKED": marked}


def _conversions(ttgir: str) -> list[str]:
    return re.findall(r"ttg\.convert_layout %\S+ (?:\{[^}]*\} )?: tensor<\d+x(\S+?),", ttgir)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_constant_and_index_arithmetic_are_made_in_the_layout_and_a_loaded_tile_is_converted(target):
    marked = hybrid.compile(hybrid.jit(caller), SIGNATURE, _constexprs(True, target), target, num_warps=4)
    plain = hybrid.compile(hybrid.jit(caller), SIGNATURE, _constexprs(False, target), target, num_warps=4)
    assert sorted(_conversions(plain.asm["ttgir"])) == ["!tt.ptr<f32>", "f32", "f32"]
    assert sorted(_conversions(marked.asm["ttgir"])) == ["f32"]   # the loaded x only
    assert marked.metadata.shared <= plain.metadata.shared


def test_upstreams_compiler_converts_as_gl_convert_layout_does():
    upstream = __import__("triton").compile(GluonASTSource(caller, {**SIGNATURE, **{k: "constexpr" for k in
                                                                                  _constexprs(True)}},
                                                           _constexprs(True)), target=TARGETS["sm90a"])
    assert len(_conversions(upstream.asm["ttgir"])) == 3


def test_the_interpreter_computes_the_same():
    x, y = torch.randn(N), torch.randn(N)
    outs = []
    for marked in (True, False):
        out = torch.zeros(N)
        with hybrid.interpreting(target="sm90a"):
            hybrid.jit(caller)[(1, )](x, y, out, num_warps=4, **_constexprs(marked))
        outs.append(out)
    torch.testing.assert_close(outs[0], 1.5 + 2 * x + y)
    torch.testing.assert_close(outs[0], outs[1])
