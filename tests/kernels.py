"""Gluon hosts calling Triton helpers: one per pattern the core must handle.

Host layouts are constexpr arguments (``L``, ``L1``) so each target gets ones valid for its
warp size; see ``cases()``.
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.targets import TARGETS

NUM_WARPS = 4


# -- Triton helpers (unported code) -------------------------------------------------------------
@triton.jit
def t_arange_load(ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    return tl.load(ptr + offs, mask=offs < n, other=0.0)


@triton.jit
def t_row_max_sum(x, BN: tl.constexpr):
    cols = tl.arange(0, BN)
    x = tl.where(cols[None, :] < BN - 1, x, 0.0)
    return tl.max(x, axis=1) + tl.sum(x, axis=1)


@triton.jit
def t_dot_loop(a_ptr, b_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(k + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :], mask=(k + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def t_trans_reshape(x, BM: tl.constexpr, BN: tl.constexpr):
    y = tl.trans(x)
    return tl.reshape(y, (BM * BN, ))


@triton.jit
def t_load_tile(ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    return tl.load(ptr + offs[:, None] * B + offs[None, :])


@triton.jit
def t_scale(x, factor):
    return x * factor


@triton.jit
def t_outer(x, factor):
    return t_scale(x, factor) + 1.0   # a Triton helper calling another Triton helper


@triton.jit
def t_load_block(ptr, BLOCK: tl.constexpr):
    return tl.load(ptr + tl.arange(0, BLOCK))


@triton.jit
def t_store_block(ptr, x, BLOCK: tl.constexpr):
    tl.store(ptr + tl.arange(0, BLOCK), x)   # returns nothing


@triton.jit
def t_store_tile(x, ptr, B: tl.constexpr):
    rows = tl.arange(0, B)
    cols = tl.arange(0, B)
    tl.store(ptr + rows[:, None] * B + cols[None, :], x)


# -- Gluon hosts (ported code) ------------------------------------------------------------------
@hybrid.jit
@gluon.jit
def k_arange_load(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L1: gl.constexpr):
    x = t_arange_load(x_ptr, n, BLOCK)
    x = gl.convert_layout(x, L1)
    offs = gl.arange(0, BLOCK, layout=L1)
    gl.store(y_ptr + offs, x, mask=offs < n)


@hybrid.jit
@gluon.jit
def k_reduce(x_ptr, y_ptr, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr):
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    r = t_row_max_sum(x, BN)
    gl.store(y_ptr + rows, gl.convert_layout(r, gl.SliceLayout(1, L)))


@hybrid.jit
@gluon.jit
def k_dot(a_ptr, b_ptr, c_ptr, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, L: gl.constexpr):
    acc = t_dot_loop(a_ptr, b_ptr, K, BM, BN, BK)
    acc = gl.convert_layout(acc, L)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    gl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


@hybrid.jit
@gluon.jit
def k_trans_reshape(x_ptr, y_ptr, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr, L1: gl.constexpr):
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    y = gl.convert_layout(t_trans_reshape(x, BM, BN), L1)
    gl.store(y_ptr + gl.arange(0, BM * BN, layout=L1), y)


@hybrid.jit
@gluon.jit
def k_regions_in_control_flow(x_ptr, y_ptr, n_iter, flag, BLOCK: gl.constexpr, L1: gl.constexpr):
    """Several regions: in a loop, in a branch, the same helper with f32 and i32 arguments."""
    offs = gl.arange(0, BLOCK, layout=L1)
    x = gl.load(x_ptr + offs)
    for i in range(n_iter):
        x = gl.convert_layout(t_scale(x, 0.5), L1)   # loop-carried values keep their layout
    if flag > 0:
        x = gl.convert_layout(t_outer(x, 2.0), L1)
    i_vals = gl.convert_layout(t_scale(offs, 3), L1)
    gl.store(y_ptr + offs, x + i_vals.to(gl.float32))


@hybrid.jit
@gluon.jit
def k_agree(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The host already holds the layout the region expects: no conversion at all."""
    offs = gl.arange(0, BLOCK, layout=L1)
    y = t_scale(gl.load(x_ptr + offs), 2.0)
    gl.store(y_ptr + offs, y)


@hybrid.jit
@gluon.jit
def k_chain(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr, L2: gl.constexpr):
    """The host converts L1 -> L2 and the region's store (a layout anchor) wants L1 back: the
    chain folds to nothing."""
    offs = gl.arange(0, BLOCK, layout=L1)
    x = gl.convert_layout(gl.load(x_ptr + offs), L2)
    t_store_block(y_ptr, x, BLOCK)


@hybrid.jit
@gluon.jit
def k_fold(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L1: gl.constexpr):
    """Foldable ops straight on a region's result: the region's load must survive inlining."""
    y = (t_arange_load(x_ptr, n, BLOCK) * 2.0).to(gl.float16)
    offs = gl.arange(0, BLOCK, layout=L1)
    gl.store(y_ptr + offs, gl.convert_layout(y, L1))


@hybrid.jit
@gluon.jit
def k_aligned(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The region loads through the kernel's 16-byte aligned pointer: it may vectorize."""
    y = t_load_block(x_ptr, BLOCK)
    offs = gl.arange(0, BLOCK, layout=L1)
    gl.store(y_ptr + offs, gl.convert_layout(y, L1))


@hybrid.jit
@gluon.jit
def k_void_region(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """A Triton region that returns nothing (the unported store)."""
    x = gl.load(x_ptr + gl.arange(0, BLOCK, layout=L1))
    t_store_block(y_ptr, x * 2.0, BLOCK)


@hybrid.jit
@gluon.jit
def k_store_unconverted(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The region's store (a layout anchor) wants its coalesced layout, the host gives another:
    a boundary conversion Triton keeps."""
    t_store_block(y_ptr, gl.load(x_ptr + gl.arange(0, BLOCK, layout=L1)), BLOCK)


@hybrid.jit
@gluon.jit
def k_read_staged_columns(x_ptr, y_ptr, B: gl.constexpr, L: gl.constexpr, LC: gl.constexpr):
    """Stages a tile in shared memory, reads it back column-wise (``LC``) for a Triton region whose
    store (a layout anchor) wants rows: the boundary conversion becomes a read in the region's layout."""
    rows = gl.arange(0, B, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, B, layout=gl.SliceLayout(0, L))
    smem = gl.allocate_shared_memory(gl.float32, [B, B], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]),
                                     gl.load(x_ptr + rows[:, None] * B + cols[None, :]))
    t_store_tile(smem.load(LC), y_ptr, B)


@hybrid.jit
@gluon.jit
def k_stage_region_result(x_ptr, y_ptr, B: gl.constexpr, LC: gl.constexpr):
    """A Triton region loads a tile by rows; the Gluon host stages the region's result in shared
    memory (``hybrid.stage``: the swizzle is planned for the region's layout and ``LC``) and reads
    it back by columns."""
    tile = hybrid.stage(t_load_tile(x_ptr, B), LC)
    rows = gl.arange(0, B, layout=gl.SliceLayout(1, LC))
    cols = gl.arange(0, B, layout=gl.SliceLayout(0, LC))
    gl.store(y_ptr + rows[:, None] * B + cols[None, :], tile.load(LC) * 2.0)


def region_1d(target: str, block: int, num_warps: int = NUM_WARPS) -> gl.BlockedLayout:
    """The layout a Triton region computes a 1D fp32 input of ``block`` elements in: that of a
    coalesced load of it (up to 16 bytes per thread), as in an all-Triton kernel."""
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([max(1, min(4, block // (warp * num_warps)))], [warp], [num_warps], [0])


def scalar_1d(target: str, num_warps: int = NUM_WARPS) -> gl.BlockedLayout:
    """One element per thread: a layout no Triton region picks for a loaded fp32 vector."""
    return gl.BlockedLayout([1], [TARGETS[target].warp_size], [num_warps], [0])


def tile_2d(target: str) -> gl.BlockedLayout:
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([1, 4], [warp // 8, 8], [NUM_WARPS, 1], [1, 0])


def vec_1d(target: str) -> gl.BlockedLayout:
    return gl.BlockedLayout([4], [TARGETS[target].warp_size], [NUM_WARPS], [0])


def column_2d(target: str) -> gl.BlockedLayout:
    """Threads down the columns: reading a row-major tile in it conflicts without a swizzle."""
    L = tile_2d(target)
    return gl.BlockedLayout([4, 1], [L.threads_per_warp[1], L.threads_per_warp[0]], [1, NUM_WARPS], [0, 1])


def cases(target: str) -> dict:
    """name -> (kernel, signature, constexprs) for ``hybrid.compile``."""
    L, L1, D1 = tile_2d(target), vec_1d(target), region_1d(target, 512)
    p32 = "*fp32"
    return {
        "arange_load": (k_arange_load, {"x_ptr": p32, "y_ptr": p32, "n": "i32"}, {"BLOCK": 256, "L1": L1}),
        "reduce": (k_reduce, {"x_ptr": p32, "y_ptr": p32}, {"BM": 32, "BN": 64, "L": L}),
        "dot": (k_dot, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": p32, "K": "i32"},
                {"BM": 64, "BN": 64, "BK": 32, "L": L}),
        "trans_reshape": (k_trans_reshape, {"x_ptr": p32, "y_ptr": p32}, {"BM": 32, "BN": 32, "L": L, "L1": L1}),
        "control_flow": (k_regions_in_control_flow, {"x_ptr": p32, "y_ptr": p32, "n_iter": "i32", "flag": "i32"},
                         {"BLOCK": 512, "L1": L1}),
        "agree": (k_agree, {"x_ptr": p32, "y_ptr": p32}, {"BLOCK": 512, "L1": D1}),
        "aligned": (k_aligned, {"x_ptr": p32, "y_ptr": p32}, {"BLOCK": 512, "L1": L1}),
        "fold": (k_fold, {"x_ptr": p32, "y_ptr": "*fp16", "n": "i32"}, {"BLOCK": 256, "L1": L1}),
        "chain": (k_chain, {"x_ptr": p32, "y_ptr": p32}, {"BLOCK": 512, "L1": D1, "L2": scalar_1d(target)}),
        "staged_columns": (k_read_staged_columns, {"x_ptr": p32, "y_ptr": p32},
                           {"B": 64, "L": L, "LC": column_2d(target)}),
        "stage": (k_stage_region_result, {"x_ptr": p32, "y_ptr": p32}, {"B": 64, "LC": column_2d(target)}),
        "void": (k_void_region, {"x_ptr": p32, "y_ptr": p32}, {"BLOCK": 512, "L1": L1}),
        "store_unconverted": (k_store_unconverted, {"x_ptr": p32, "y_ptr": p32},
                              {"BLOCK": 512, "L1": scalar_1d(target)}),
    }
