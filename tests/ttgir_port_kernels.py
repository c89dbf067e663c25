"""A Gluon kernel calling a Triton helper with the elementwise ops a port must carry over:
masked loads and stores, a scan, an atomic, libdevice, unsigned integer arithmetic, casts
(tests/test_port_ttgir.py)."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.language.extra import libdevice

import hybrid

SIGNATURE = {"x_ptr": "*fp32", "bits_ptr": "*i32", "y_ptr": "*fp32", "total_ptr": "*fp32", "n": "i32"}
BLOCK = 256


@triton.jit
def mixed(x_ptr, bits_ptr, y_ptr, total_ptr, offs, n):
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bits = tl.load(bits_ptr + offs, mask=mask, other=0).to(tl.uint32, bitcast=True)
    shifted = ((bits >> 3) // 5 % 7).to(tl.float32)       # unsigned shift, division, remainder
    y = tl.cumsum(libdevice.erf(x) + shifted, axis=0)    # libdevice, a scan
    tl.store(y_ptr + offs, y.to(tl.float16).to(tl.float32), mask=mask)
    tl.atomic_add(total_ptr, tl.sum(tl.where(mask, x, 0.0), axis=0))
    return tl.maximum(y, 0.0)


@hybrid.jit
@gluon.jit
def mixed_kernel(x_ptr, bits_ptr, y_ptr, total_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    y = gl.convert_layout(mixed(x_ptr, bits_ptr, y_ptr, total_ptr, offs, n), L)
    gl.store(y_ptr + offs, y * 2.0, mask=offs < n // 2)


def layout(target: str) -> gl.BlockedLayout:
    from interop.targets import TARGETS
    return gl.BlockedLayout([2], [TARGETS[target].warp_size], [4], [0])
