"""A Gluon host making a TMA descriptor in a layout it is given and passing it into a Triton
region, for ``tests/test_errors.py``."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

import hybrid

SIGNATURE = {"x_ptr": "*fp16", "out_ptr": "*fp32", "M": "i32", "N": "i32"}
BM, BN = 64, 64
ODD = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16, rank=2)   # not Triton's choice here
DEFAULT = gl.NVMMASharedLayout.get_default_for([BM, BN], gl.float16)


@triton.jit
def tile_sum(desc, off_m):
    return tl.sum(tl.sum(desc.load([off_m, 0]).to(tl.float32), axis=1), axis=0)


@hybrid.jit
@gluon.jit
def tile_sums(x_ptr, out_ptr, M, N, BM: gl.constexpr, BN: gl.constexpr, LAYOUT: gl.constexpr):
    desc = tma.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], LAYOUT)
    gl.store(out_ptr + gl.program_id(0), tile_sum(desc, gl.program_id(0) * BM))
