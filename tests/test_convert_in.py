"""``hybrid.convert_in``: a Gluon function's tensor argument in the layout it needs, made there
where its caller made it from a splat constant or index arithmetic (as a region's boundary does),
converted otherwise (in a Gluon kernel and in a Triton kernel's Gluon region); a plain
``gl.convert_layout`` outside hybrid."""
import re

import pytest
import torch
import triton
import triton.language as tl
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


def _layouts(target: str) -> tuple:
    """One element per thread, and two."""
    lanes = TARGETS[target].warp_size
    return gl.BlockedLayout([1], [lanes], [4], [0]), gl.BlockedLayout([2], [lanes], [4], [0])


def _constexprs(marked: bool, target: str = "sm90a") -> dict:
    """The caller's layout one element per thread, the function's two."""
    one, two = _layouts(target)
    return {"N": N, "A": one, "L": two, "MARKED": marked}


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


@gluon.jit
def doubled_in_place(ptrs, L1: gl.constexpr, L2: gl.constexpr, MARKED: gl.constexpr):
    """``*ptrs *= 2``, loaded in ``L1`` and stored in ``L2``: the pointer tile wanted in two layouts."""
    if MARKED:
        loads, stores = hybrid.convert_in(ptrs, L1), hybrid.convert_in(ptrs, L2)
    else:
        loads, stores = gl.convert_layout(ptrs, L1), gl.convert_layout(ptrs, L2)
    gl.store(stores, gl.convert_layout(gl.load(loads) * 2.0, L2))


@triton.jit
def triton_caller(x_ptr, N: tl.constexpr, L1: tl.constexpr, L2: tl.constexpr, MARKED: tl.constexpr):
    doubled_in_place(x_ptr + tl.arange(0, N), L1, L2, MARKED)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_in_a_triton_kernels_gluon_region_index_arithmetic_is_made_in_each_layout_it_is_wanted_in(target):
    """A Triton host's pointer tile reaches its Gluon region in one layout; the region wants it in
    two. Plain conversions leave at least one pointer conversion; ``convert_in`` makes the
    arithmetic again in each layout, as a Gluon kernel's caller would, leaving the data's only."""
    one, two = _layouts(target)
    built = {marked: hybrid.compile(hybrid.jit(triton_caller), {"x_ptr": "*fp32"},
                                    {"N": N, "L1": two, "L2": one, "MARKED": marked}, target, num_warps=4)
             for marked in (True, False)}
    assert "!tt.ptr<f32>" in _conversions(built[False].asm["ttgir"])
    assert _conversions(built[True].asm["ttgir"]) == ["f32"]   # the loaded data, once


def test_in_a_triton_kernels_gluon_region_the_interpreter_computes_the_same():
    x = torch.randn(N)
    outs = []
    for marked in (True, False):
        out = x.clone()
        one, two = _layouts("sm90a")
        with hybrid.interpreting(target="sm90a"):
            hybrid.jit(triton_caller)[(1, )](out, N=N, L1=two, L2=one, MARKED=marked, num_warps=4)
        outs.append(out)
    torch.testing.assert_close(outs[0], 2 * x)
    torch.testing.assert_close(outs[0], outs[1])
