"""Kernels written as kernel libraries (Liger-Kernel, flash-linear-attention) write them, for
tests/test_library_kernels.py: a helper defined inside ``if``/``else``, libdevice calls, float
arguments cast with ``.to()``, a scan with a custom combine function, an autotuned kernel."""
import os

import triton
import triton.language as tl
from triton.language.extra import libdevice

if os.environ.get("HYBRID_TEST_FAST_EXP", "0") == "1":   # as flash-linear-attention picks its exp
    @triton.jit
    def exp(x):
        return tl.exp2(x * 1.4426950408889634)
else:
    @triton.jit
    def exp(x):
        return tl.exp(x.to(tl.float32))


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    e = exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def rms_norm_kernel(y_ptr, x_ptr, w_ptr, stride, n_cols, eps, offset, BLOCK: tl.constexpr):
    """Liger's RMSNorm forward: ``libdevice.rsqrt``, and float arguments cast with ``.to()``."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = libdevice.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps.to(tl.float32))
    tl.store(y_ptr + row * stride + cols, x * rstd * (offset.to(tl.float32) + w), mask=mask)


@triton.jit
def gelu_tanh(a):
    """Liger's GEGLU activation: ``libdevice.tanh`` (``__nv_tanhf``, ``__ocml_tanh_f32``)."""
    inner = 0.7978845608028654 * (a + 0.044715 * a * a * a)
    return 0.5 * a * (1 + libdevice.tanh(inner))


@triton.jit
def geglu_kernel(a_ptr, b_ptr, c_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(c_ptr + cols, gelu_tanh(a) * b, mask=mask)


@triton.jit
def pow_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    """``libdevice.pow``: two arguments, no numpy rule in the interpreter."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n
    a = tl.load(a_ptr + cols, mask=mask, other=1.0)
    tl.store(c_ptr + cols, libdevice.pow(a, tl.load(b_ptr + cols, mask=mask, other=1.0)), mask=mask)


@triton.jit
def first_order(a1, b1, a2, b2):
    """Combine function of the recurrence h[t] = a[t] * h[t - 1] + b[t]."""
    return a1 * a2, b1 * a2 + b2


@triton.jit
def recurrence_kernel(a_ptr, b_ptr, h_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, h = tl.associative_scan((a, b), 0, first_order)
    tl.store(h_ptr + offs, h)


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, silu(x), mask=mask)


@triton.jit
def dtype_call_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """``tl.float32(n)`` as a cast: the compiler rejects it ("'dtype' object is not callable")."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * tl.float32(n))
