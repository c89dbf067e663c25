"""A mixed kernel under ``@triton.autotune``: a Triton host with a Gluon region, two configs."""
import triton
import triton.language as tl
from triton.experimental import gluon

import hybrid


@gluon.jit
def g_scale(x, scale):
    """Layout-free Gluon code: it computes in the layout the Triton host gives its tensor."""
    return x * scale


CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8, num_stages=2)]
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "scale": "fp32"}


@triton.autotune(configs=CONFIGS, key=["n"])
@hybrid.jit
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, g_scale(tl.load(x_ptr + offs, mask=mask), scale), mask=mask)
