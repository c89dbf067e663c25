"""A Triton helper that makes a tensor descriptor for its kernel (tests/test_port_ttgir.py)."""
import triton
import triton.language as tl

SIGNATURE = {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32", "N": "i32"}
CONSTEXPRS = {"BM": 64, "BN": 64}


@triton.jit
def tile_descriptor(ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])


@triton.jit
def k_descriptor_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    x_desc = tile_descriptor(x_ptr, M, N, BM, BN)
    y_desc = tile_descriptor(y_ptr, M, N, BM, BN)
    y_desc.store([tl.program_id(0) * BM, 0], x_desc.load([tl.program_id(0) * BM, 0]))
