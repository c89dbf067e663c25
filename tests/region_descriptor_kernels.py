"""Triton kernels passing tensor descriptors into Gluon functions that copy through them with
TMA, for ``tests/test_region_descriptors.py``."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

import hybrid
from interop.triton.compat import gluon_tma_copies

tma_load, tma_store = gluon_tma_copies()

SIGNATURE = {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32", "N": "i32"}
BM, BN = 64, 64
SWIZZLED_64 = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16, rank=2)   # not the default here


@gluon.jit
def load_tile(desc, off_m, off_n, L: gl.constexpr):
    """The block of ``desc`` at ``[off_m, off_n]``, copied by TMA into shared memory, loaded in ``L``."""
    smem = gl.allocate_shared_memory(desc.dtype, desc.block_type.shape, desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, desc.block_type.nbytes)
    tma_load(desc, [off_m, off_n], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    return smem.load(L)


@gluon.jit
def store_tile(desc, tile, off_m):
    """``tile`` stored through ``desc`` at row ``off_m`` by TMA."""
    smem = gl.allocate_shared_memory(desc.dtype, desc.block_type.shape, desc.layout, tile)
    fence_async_shared()
    tma_store(desc, [off_m, 0], smem)
    tma.store_wait(0)


@hybrid.jit
@triton.jit
def double_tiles(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    tile = load_tile(x_desc, off_m, 0, L)
    store_tile(y_desc, tile * 2, off_m)


@hybrid.jit
@triton.jit
def double_tiles_triton(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """``double_tiles`` all Triton."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    y_desc.store([off_m, 0], x_desc.load([off_m, 0]) * 2)


@hybrid.jit
@triton.jit
def double_host_tiles(x_desc, y_desc, BM: tl.constexpr, L: tl.constexpr):
    """``double_tiles`` through the descriptors the host made (``TensorDescriptor`` arguments)."""
    off_m = tl.program_id(0) * BM
    tile = load_tile(x_desc, off_m, 0, L)
    store_tile(y_desc, tile * 2, off_m)


@gluon.jit
def load_tile_swizzled_64(desc, off_m, L: gl.constexpr):
    """``load_tile`` into a buffer of its own layout, not the descriptor's."""
    smem = gl.allocate_shared_memory(desc.dtype, desc.block_type.shape, SWIZZLED_64)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, desc.block_type.nbytes)
    tma_load(desc, [off_m, 0], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    return smem.load(L)


@hybrid.jit
@triton.jit
def load_into_another_layout(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    tile = load_tile_swizzled_64(x_desc, off_m, L)
    tl.store(y_ptr + off_m * N + tl.arange(0, BM)[:, None] * N + tl.arange(0, BN)[None, :], tile)


@hybrid.jit
@triton.jit
def row_block_sums(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """Each row block's column blocks summed, loaded by the Gluon function in a loop (as
    attention's inner loop loads K and V): ``y`` is ``M x BN``."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    acc = tl.zeros((BM, BN), tl.float32)
    for off_n in range(0, N, BN):
        acc += load_tile(x_desc, off_m, off_n, L).to(tl.float32)
    tl.store(y_ptr + (off_m + tl.arange(0, BM))[:, None] * BN + tl.arange(0, BN)[None, :], acc.to(tl.float16))


@hybrid.jit
@triton.jit
def row_block_sums_triton(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """``row_block_sums`` all Triton."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    off_m = tl.program_id(0) * BM
    acc = tl.zeros((BM, BN), tl.float32)
    for off_n in range(0, N, BN):
        acc += x_desc.load([off_m, off_n]).to(tl.float32)
    tl.store(y_ptr + (off_m + tl.arange(0, BM))[:, None] * BN + tl.arange(0, BN)[None, :], acc.to(tl.float16))


@gluon.jit
def double_block(x_desc, y_desc, off_m, L: gl.constexpr):
    """The block of ``x_desc`` at row ``off_m`` doubled into ``y_desc``, on every target: by TMA
    where the descriptors are TMA descriptors, through pointers where they are ``PointerDescriptor``."""
    tile = hybrid.load_block(x_desc, [off_m, 0], L)
    hybrid.store_block(y_desc, [off_m, 0], tile * 2)


@hybrid.jit
@triton.jit
def double_blocks(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """``double_tiles`` through one portable Gluon function."""
    x_desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    double_block(x_desc, y_desc, tl.program_id(0) * BM, L)


@hybrid.jit
@triton.jit
def double_host_blocks(x_desc, y_desc, BM: tl.constexpr, L: tl.constexpr):
    """``double_blocks`` through the descriptors the host made (``TensorDescriptor`` arguments)."""
    double_block(x_desc, y_desc, tl.program_id(0) * BM, L)


@hybrid.jit
@triton.jit
def padded_host_blocks(x_desc, y_ptr, BM: tl.constexpr, L: tl.constexpr):
    """The blocks of ``x_desc`` stored unmasked into ``y_ptr`` (``BM`` rows a program, 64 columns):
    the rows past ``x``'s last read as its padding option says."""
    off_m = tl.program_id(0) * BM
    tile = block_at(x_desc, off_m, L)
    tl.store(y_ptr + (off_m + tl.arange(0, BM))[:, None] * 64 + tl.arange(0, 64)[None, :], tile)


@gluon.jit
def block_at(x_desc, off_m, L: gl.constexpr):
    """The block of ``x_desc`` at row ``off_m``, on every target."""
    return hybrid.load_block(x_desc, [off_m, 0], L)
