"""Small Gluon kernels in the patterns of upstream's Gluon tutorials, for the interpreter tests:
layouts, cp.async, TMA with mbarriers, wgmma, tcgen05, warp specialization, persistence; and a
Triton kernel drawing ``tl.rand``."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from interop.triton.compat import gluon_async_copy, gluon_tma_copies

tma_load, tma_store = gluon_tma_copies()
cp_async = gluon_async_copy()


@gluon.jit
def memcpy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    """Tutorial 1: a 1D copy with an explicit (vectorised) blocked layout."""
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    mask = offs < n
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=mask), mask=mask)


@gluon.jit
def transpose_kernel(x_ptr, y_ptr, M, N, stride_x, stride_y, BM: gl.constexpr, BN: gl.constexpr,
                     LOAD: gl.constexpr, STORE: gl.constexpr):
    """Tutorial 2: read rows coalesced, convert, write columns coalesced (y = x.T)."""
    rm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, LOAD))
    rn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LOAD))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = gl.load(x_ptr + rm[:, None] * stride_x + rn[None, :], mask=mask)
    x = gl.convert_layout(x, STORE)
    sm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, STORE))
    sn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, STORE))
    smask = (sm[:, None] < M) & (sn[None, :] < N)
    gl.store(y_ptr + sn[None, :] * stride_y + sm[:, None], x, mask=smask)


@gluon.jit
def cp_async_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr, S: gl.constexpr):
    """Tutorial 3: cp.async into a double-buffered shared ring, wait_group, read back doubled."""
    smem = gl.allocate_shared_memory(gl.float32, [2, BLOCK], S)
    offs = gl.arange(0, BLOCK, layout=L)
    for i in gl.static_range(2):
        cp_async(smem.index(i), x_ptr + i * BLOCK + offs)
        async_copy.commit_group()
    async_copy.wait_group(0)
    for i in gl.static_range(2):
        gl.store(y_ptr + i * BLOCK + offs, smem.index(i).load(L) * 2)


@gluon.jit
def tma_kernel(in_desc, out_desc, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr):
    """Tutorial 4: a TMA load tracked by an mbarrier, a register op, a TMA store."""
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    smem = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    off_m = gl.program_id(0) * BM
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma_load(in_desc, [off_m, 0], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    x = smem.load(L)
    smem.store(x + 1.0)
    fence_async_shared()
    tma_store(out_desc, [off_m, 0], smem)
    tma.store_wait(0)


@gluon.jit
def _operands_in_shared(a_ptr, b_ptr, M: gl.constexpr, N: gl.constexpr, K: gl.constexpr, L: gl.constexpr,
                        SA: gl.constexpr, SB: gl.constexpr):
    """Row-major A (MxK) and B (KxN) from global memory into shared memory of layouts SA, SB."""
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, L))
    rk = gl.arange(0, K, layout=gl.SliceLayout(0, L))
    rkb = gl.arange(0, K, layout=gl.SliceLayout(1, L))
    rn = gl.arange(0, N, layout=gl.SliceLayout(0, L))
    a = gl.allocate_shared_memory(gl.float16, [M, K], SA, gl.load(a_ptr + rm[:, None] * K + rk[None, :]))
    b = gl.allocate_shared_memory(gl.float16, [K, N], SB, gl.load(b_ptr + rkb[:, None] * N + rn[None, :]))
    return a, b


@gluon.jit
def _store_rows(c_ptr, acc, M: gl.constexpr, N: gl.constexpr, L: gl.constexpr):
    """The row-major MxN result, converted to the blocked layout L and stored."""
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, L))
    rn = gl.arange(0, N, layout=gl.SliceLayout(0, L))
    gl.store(c_ptr + rm[:, None] * N + rn[None, :], gl.convert_layout(acc, L))


@gluon.jit
def wgmma_kernel(a_ptr, b_ptr, c_ptr, M: gl.constexpr, N: gl.constexpr, K: gl.constexpr, L: gl.constexpr,
                 SA: gl.constexpr, SB: gl.constexpr, ACC: gl.constexpr):
    """Tutorial 5: operands in NVMMA-swizzled shared memory, one warpgroup MMA (sm90)."""
    a, b = _operands_in_shared(a_ptr, b_ptr, M, N, K, L, SA, SB)
    fence_async_shared()
    acc = gl.zeros([M, N], gl.float32, ACC)
    acc = warpgroup_mma(a, b, acc, is_async=True)
    _store_rows(c_ptr, warpgroup_mma_wait(num_outstanding=0, deps=[acc]), M, N, L)


@gluon.jit
def ring_buffers(BLOCK: gl.constexpr, STAGES: gl.constexpr):
    """A ring of ``STAGES`` fp32 tiles and its ``ready``/``empty`` mbarriers, initialized."""
    ring = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    return ring, ready, empty


@gluon.jit
def ring_producer(x_ptr, ring, ready, empty, n_tiles, BLOCK: gl.constexpr, STAGES: gl.constexpr, ARRIVE: gl.constexpr):
    L: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout=L)
    for i in range(n_tiles):
        s = i % STAGES
        mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)   # the slot was released
        ring.index(s).store(gl.load(x_ptr + i * BLOCK + offs))
        if ARRIVE:
            mbarrier.arrive(ready.index(s), count=1)


@gluon.jit
def ring_sum(ring, ready, empty, n_tiles, BLOCK: gl.constexpr, STAGES: gl.constexpr):
    """Sum the tiles a producer passes through ``ring``; returns a 1-tuple (Triton 3.6's
    ``warp_specialize`` cannot flatten a lone tensor a default partition returns)."""
    L: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    acc = gl.zeros([BLOCK], gl.float32, L)
    for i in range(n_tiles):
        s = i % STAGES
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        acc += ring.index(s).load(L)
        mbarrier.arrive(empty.index(s), count=1)
    return (acc, )


@gluon.jit
def _consumer(y_ptr, ring, ready, empty, n_tiles, BLOCK: gl.constexpr, STAGES: gl.constexpr,
              ARRIVE: gl.constexpr):
    acc, = ring_sum(ring, ready, empty, n_tiles, BLOCK, STAGES)
    gl.store(y_ptr + gl.arange(0, BLOCK, layout=acc.type.layout), acc)


@gluon.jit
def pipeline_kernel(x_ptr, y_ptr, n_tiles, BLOCK: gl.constexpr, STAGES: gl.constexpr, ARRIVE: gl.constexpr):
    """Tutorial 6: a warp-specialised producer fills a ring; the default partition sums it.
    With ARRIVE=False the producer never signals ``ready``: a deadlock."""
    ring, ready, empty = ring_buffers(BLOCK, STAGES)
    gl.warp_specialize([(_consumer, (y_ptr, ring, ready, empty, n_tiles, BLOCK, STAGES, ARRIVE)),
                        (ring_producer, (x_ptr, ring, ready, empty, n_tiles, BLOCK, STAGES, ARRIVE))], [1], [24])


@gluon.jit
def persistent_kernel(x_ptr, y_ptr, n_tiles, BLOCK: gl.constexpr, L: gl.constexpr):
    """Tutorial 7: a persistent grid strides over tiles (y = 2x)."""
    offs = gl.arange(0, BLOCK, layout=L)
    for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        gl.store(y_ptr + tile * BLOCK + offs, gl.load(x_ptr + tile * BLOCK + offs) * 2)


@gluon.jit
def tcgen05_kernel(a_ptr, b_ptr, c_ptr, M: gl.constexpr, N: gl.constexpr, K: gl.constexpr, L: gl.constexpr,
                   SA: gl.constexpr, SB: gl.constexpr, REG: gl.constexpr):
    """Tutorial 8: a Blackwell MMA into tensor memory, completion signalled by tcgen05_commit; read
    back in ``REG``, or (``REG=None``, Triton 3.9) the layout ``tmem.get_reg_layout()`` gives."""
    a, b = _operands_in_shared(a_ptr, b_ptr, M, N, K, L, SA, SB)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    fence_async_shared()
    acc = blackwell.allocate_tensor_memory(gl.float32, [M, N], blackwell.TensorMemoryLayout(block=(M, N), col_stride=1))
    blackwell.tcgen05_mma(a, b, acc, use_acc=False)
    blackwell.tcgen05_commit(bar)
    mbarrier.wait(bar, phase=0)
    _store_rows(c_ptr, acc.load(acc.get_reg_layout() if REG is None else REG), M, N, L)


@gluon.jit
def slice_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    """A shared buffer used through ``smem.slice`` views (upper half written, read back doubled)."""
    offs = gl.arange(0, BLOCK, layout=L)
    smem = gl.allocate_shared_memory(gl.float32, [2 * BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    smem.slice(BLOCK, BLOCK).store(gl.load(x_ptr + offs))
    gl.store(y_ptr + offs, smem.slice(BLOCK, BLOCK).load(L) * 2)


@gluon.jit
def buffer_copy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    """AMD buffer ops: a scalar base and element offsets, masked at the tail (y = 3 * x)."""
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    x = cdna3.buffer_load(x_ptr, offs, mask=offs < n, other=0.0)
    cdna3.buffer_store(x * 3, y_ptr, offs, mask=offs < n)


@gluon.jit
def splat_mask_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    """A comparison splat into a mask, as a port writes Triton's pipelined loads (y = x where n > 0)."""
    offs = gl.arange(0, BLOCK, layout=L)
    mask = gl.full([BLOCK], n > 0, gl.int1, layout=L)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=mask, other=0.0))


@triton.jit
def rand_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    """``tl.rand`` and ``tl.randint``: Triton's Philox, a ``tl.static_range`` loop in library code."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs) + tl.randint(seed, offs).to(tl.float32))
