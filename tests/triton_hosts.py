"""Triton kernels calling Gluon functions: one per pattern the escape hatch must handle.

The Gluon functions' layouts are constexpr arguments so each target gets ones valid for its
warp size; see ``cases()``.
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.triton.compat import gluon_barrier
from tests.interp_kernels import ring_buffers, ring_producer, ring_sum
from tests.kernels import NUM_WARPS, t_scale, tile_2d, vec_1d

barrier = gluon_barrier()


# -- Gluon functions (the ported pieces) --------------------------------------------------------
@gluon.jit
def g_row_sum(x, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    return gl.sum(x * 2.0, axis=1)


@hybrid.takes(x="L")
@gluon.jit
def g_row_sum_declared(x, L: gl.constexpr):
    """``g_row_sum`` with its input layout declared instead of converted in the body."""
    return gl.sum(x * 2.0, axis=1)


@hybrid.takes(x=hybrid.shared(gl.SwizzledSharedLayout(1, 1, 1, [1, 0])))
@gluon.jit
def g_transpose_shared(x, L: gl.constexpr, LT: gl.constexpr):
    """``g_transpose_through_smem`` with the tile handed over in shared memory by the host."""
    return x.permute((1, 0)).load(LT)


@hybrid.takes(x=hybrid.shared())   # the compiler plans the swizzle
@gluon.jit
def g_read_columns(x, L: gl.constexpr, LT: gl.constexpr):
    """Reads the handed-over tile column-wise (``LT``), the host wrote it row-wise."""
    return x.load(LT) * 2.0


@gluon.jit
def g_stage_in_shared(x, L: gl.constexpr, LT: gl.constexpr):
    """Returns a shared buffer: the host gets it loaded in the layout its own code wants."""
    return gl.allocate_shared_memory(x.dtype, x.shape, gl.SwizzledSharedLayout(1, 1, 1, [1, 0]),
                                     gl.convert_layout(x * 3.0, L))


@gluon.jit
def g_transpose_through_smem(x, L: gl.constexpr, LT: gl.constexpr):
    """Stage a tile in shared memory and read it back transposed, with a barrier between."""
    smem = gl.allocate_shared_memory(x.dtype, x.shape, gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    smem.store(gl.convert_layout(x, L))
    barrier()
    return smem.permute((1, 0)).load(LT)


@gluon.jit
def g_scale_then_triton(x, L1: gl.constexpr):
    x = gl.convert_layout(x, L1)
    return t_scale(x, 3.0)        # a Gluon region calling a Triton helper: a region in a region


@gluon.jit
def g_add_one(x, L1: gl.constexpr):
    return gl.convert_layout(x, L1) + 1.0


@gluon.jit
def g_plus_one(x):
    return x + 1.0


@hybrid.jit
@triton.jit
def h_scale(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """The smallest Triton host with a Gluon call: a function without layouts of its own, on the
    host's tile (the stage hook's and the pass runner's tests build it)."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_plus_one(tl.load(x_ptr + offs) * 3.0))


@gluon.jit
def g_scale_acc(acc, L: gl.constexpr):
    """Work in the author's layout, hand the result back in the host's."""
    return gl.convert_layout(gl.convert_layout(acc, L) * 0.5, acc.type.layout)


@gluon.jit
def g_tile_and_max(x, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    return x * 2.0, gl.max(gl.max(x, axis=1), axis=0)


@gluon.jit
def g_tile_and_row_sums(x, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    return x * 2.0, gl.sum(x, axis=1)


@gluon.jit
def g_ring_sum(x_ptr, n_tiles, BLOCK: gl.constexpr, STAGES: gl.constexpr):
    """Warp specialization inside a region: a one-warp worker streams tiles through a shared ring,
    the default partition sums them and its result is the region's (sm90+)."""
    ring, ready, empty = ring_buffers(BLOCK, STAGES)
    acc, = gl.warp_specialize([(ring_sum, (ring, ready, empty, n_tiles, BLOCK, STAGES)),
                               (ring_producer, (x_ptr, ring, ready, empty, n_tiles, BLOCK, STAGES, True))], [1], [24])
    return acc


# -- Triton hosts (unported code) ---------------------------------------------------------------
@hybrid.jit
@triton.jit
def h_reduce(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr, REGION: tl.constexpr, L: tl.constexpr):
    """Row sums of a ``BM x BN`` tile by the Gluon function ``REGION(x, L)``."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    tl.store(y_ptr + rows, REGION(x, L) + 1.0)


@hybrid.jit
@triton.jit
def h_square_tile(x_ptr, y_ptr, B: tl.constexpr, REGION: tl.constexpr, L: tl.constexpr, LT: tl.constexpr):
    """A ``B x B`` tile through the Gluon function ``REGION(x, L, LT)``."""
    r = tl.arange(0, B)
    y = REGION(tl.load(x_ptr + r[:, None] * B + r[None, :]), L, LT)
    tl.store(y_ptr + r[:, None] * B + r[None, :], y)


@hybrid.jit
@triton.jit
def h_row_loop(x_ptr, y_ptr, n_rows, BLOCK: tl.constexpr, L1: tl.constexpr):
    """A Gluon call in a loop whose result is stored, not carried: the loop has no iter_args, so
    its body holds its ``scf.yield`` from the start (upstream fused softmax's persistent rows)."""
    for row in range(0, n_rows):
        offs = row * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, g_add_one(tl.load(x_ptr + offs), L1))


@hybrid.jit
@triton.jit
def h_control_flow(x_ptr, y_ptr, n_iter, flag, BLOCK: tl.constexpr, L1: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for _ in range(n_iter):
        x = g_add_one(x, L1)
    if flag > 0:
        x = g_scale_then_triton(x, L1)
    tl.store(y_ptr + offs, x)


@hybrid.jit
@triton.jit
def h_strided_rows(x_ptr, y_ptr, stride, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    """Rows ``stride`` elements apart: vector loads only where ``stride`` is known to be a multiple of 16."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :])
    tl.store(y_ptr + rows, g_row_sum(x, L))


@hybrid.jit
@triton.jit
def h_pipelined_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, L: tl.constexpr,
                     GLUON: tl.constexpr):
    """A Gluon region in a K loop Triton pipelines (``GLUON=False``: the same kernel in pure Triton)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=3):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
        if GLUON:
            acc = g_scale_acc(acc, L)
        else:
            acc = acc * 0.5
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@hybrid.jit
@triton.jit
def h_two_results(x_ptr, y_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr, REGION: tl.constexpr, L: tl.constexpr):
    """``REGION(x, L)`` returns a tile and a second result (a scalar or a row vector): both are stored."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    y, s = REGION(tl.load(x_ptr + rows[:, None] * BN + cols[None, :]), L)
    tl.store(y_ptr + rows[:, None] * BN + cols[None, :], y)
    tl.store(z_ptr + rows, s)


@hybrid.jit
@triton.jit
def h_warp_specialized(x_ptr, y_ptr, n_tiles, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_ring_sum(x_ptr, n_tiles, BLOCK, 2) * 2.0)


def cases(target: str) -> dict:
    """name -> (kernel, signature, constexprs) for ``hybrid.compile``."""
    L, L1 = tile_2d(target), vec_1d(target)
    LT = gl.BlockedLayout([4, 1], [8, L.threads_per_warp[0]], [1, NUM_WARPS], [0, 1])
    p32 = "*fp32"
    return {
        "reduce": (h_reduce, {"x_ptr": p32, "y_ptr": p32}, {"BM": 32, "BN": 64, "REGION": g_row_sum, "L": L}),
        "declared_reduce": (h_reduce, {"x_ptr": p32, "y_ptr": p32},
                            {"BM": 32, "BN": 64, "REGION": g_row_sum_declared, "L": L}),
        "smem": (h_square_tile, {"x_ptr": p32, "y_ptr": p32}, {"B": 32, "REGION": g_transpose_through_smem, "L": L,
                                                                "LT": LT}),
        "shared_handoff": (h_square_tile, {"x_ptr": p32, "y_ptr": p32}, {"B": 32, "REGION": g_transpose_shared, "L": L,
                                                                          "LT": LT}),
        "planned_handoff": (h_square_tile, {"x_ptr": p32, "y_ptr": p32}, {"B": 32, "REGION": g_read_columns, "L": L,
                                                                           "LT": LT}),
        "shared_result": (h_square_tile, {"x_ptr": p32, "y_ptr": p32}, {"B": 32, "REGION": g_stage_in_shared, "L": L,
                                                                         "LT": LT}),
        "control_flow": (h_control_flow, {"x_ptr": p32, "y_ptr": p32, "n_iter": "i32", "flag": "i32"},
                         {"BLOCK": 512, "L1": L1}),
        "row_loop": (h_row_loop, {"x_ptr": p32, "y_ptr": p32, "n_rows": "i32"}, {"BLOCK": 512, "L1": L1}),
        "pipelined_loop": (h_pipelined_loop, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": p32, "K": "i32"},
                           {"BM": 64, "BN": 64, "BK": 32, "L": L, "GLUON": True}),
        "tile_and_scalar": (h_two_results, {"x_ptr": p32, "y_ptr": p32, "z_ptr": p32},
                            {"BM": 32, "BN": 64, "REGION": g_tile_and_max, "L": L}),
        "warp_specialized": (h_warp_specialized, {"x_ptr": p32, "y_ptr": p32, "n_tiles": "i32"}, {"BLOCK": 256}),
        "two_shapes": (h_two_results, {"x_ptr": p32, "y_ptr": p32, "z_ptr": p32},
                       {"BM": 32, "BN": 64, "REGION": g_tile_and_row_sums, "L": L}),
    }
