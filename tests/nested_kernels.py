"""Regions inside regions (Gluon -> Triton -> Gluon), which the compiler and the interpreter
both refuse with one ``RegionError``, and the single level (a Gluon region calling a Triton
helper) that both run."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid


@gluon.jit
def g_double(x):
    return x * 2.0


@triton.jit
def t_calls_gluon(x):
    return g_double(x) + 1.0   # the nested region


@triton.jit
def t_plus_one(x):
    return x + 1.0


@gluon.jit
def g_calls_triton(x, L: gl.constexpr):
    return gl.convert_layout(t_calls_gluon(x), L)


@gluon.jit
def g_calls_triton_helper(x, L: gl.constexpr):
    return gl.convert_layout(t_plus_one(gl.convert_layout(x, L)), L)


@hybrid.jit
@gluon.jit
def gluon_host_nested(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    """Gluon host -> Triton region -> Gluon."""
    offs = gl.arange(0, BLOCK, layout=L)
    y = gl.convert_layout(t_calls_gluon(gl.load(x_ptr + offs)), L)
    gl.store(y_ptr + offs, y)


@hybrid.jit
@triton.jit
def triton_host_nested(x_ptr, y_ptr, BLOCK: tl.constexpr, L: tl.constexpr):
    """Triton host -> Gluon region -> Triton -> Gluon."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_calls_triton(tl.load(x_ptr + offs), L))


@hybrid.jit
@triton.jit
def triton_host_one_level(x_ptr, y_ptr, BLOCK: tl.constexpr, L: tl.constexpr):
    """Triton host -> Gluon region -> Triton helper: the single level, which works."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_calls_triton_helper(tl.load(x_ptr + offs), L))
