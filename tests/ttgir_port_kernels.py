"""A Gluon kernel calling a Triton helper with the elementwise ops a port must carry over:
masked loads and stores, a scan, an atomic, libdevice, unsigned integer arithmetic, casts
(tests/test_port_ttgir.py)."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.language.extra import libdevice

import hybrid
from examples.attention import kv_loop

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


@hybrid.jit
@gluon.jit
def attention_kernel(Q, K, V, O, sm_scale, N_CTX, HEAD_DIM: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                     L: gl.constexpr, ACC_L: gl.constexpr, ROW_L: gl.constexpr, K_L: gl.constexpr, V_L: gl.constexpr):
    """``bench/parity_ports.attention_gluon_host`` with the layouts of the KV loop's initial values
    (``acc`` in ``ACC_L``, ``m_i`` and ``l_i`` in ``ROW_L``) and pointer tiles (``K_L``, ``V_L``)
    named by the caller: the kernel a port's ``made_in_place`` say how to write."""
    base = gl.program_id(1).to(gl.int64) * N_CTX * HEAD_DIM
    offs_m = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    offs_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, L))
    q = gl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    k_ptrs = (K + base + gl.arange(0, BN, layout=gl.SliceLayout(0, K_L))[None, :] * HEAD_DIM
              + gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(1, K_L))[:, None])
    v_ptrs = (V + base + gl.arange(0, BN, layout=gl.SliceLayout(1, V_L))[:, None] * HEAD_DIM
              + gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, V_L))[None, :])
    m_i = gl.full([BM], float("-inf"), gl.float32, layout=ROW_L)
    l_i = gl.full([BM], 1.0, gl.float32, layout=ROW_L)
    acc = gl.zeros([BM, HEAD_DIM], gl.float32, layout=ACC_L)
    acc, m_i, l_i = kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, gl.arange(0, BN, layout=gl.SliceLayout(0, L)),
                            sm_scale * 1.44269504, 0, N_CTX, HEAD_DIM, BN, False)
    l_i = gl.convert_layout(l_i, gl.SliceLayout(1, acc.type.layout))
    o = gl.convert_layout((acc / l_i[:, None]).to(gl.float16), L)
    gl.store(O + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o)


@triton.jit
def shifted(x, shift):
    return x + shift


@hybrid.jit
@gluon.jit
def shift_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    """Calls ``shifted`` with the constant 0: Triton folds it into the region's IR."""
    offs = gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, shifted(gl.load(x_ptr + offs), 0))


@hybrid.jit
@gluon.jit
def shift_by_two_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr, SHIFTED: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, SHIFTED(gl.load(x_ptr + offs), 2))


@hybrid.jit
@gluon.jit
def shift_by_runtime_kernel(x_ptr, y_ptr, shift, BLOCK: gl.constexpr, L: gl.constexpr, SHIFTED: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, SHIFTED(gl.load(x_ptr + offs), shift))


def transposed(L: gl.BlockedLayout) -> gl.BlockedLayout:
    """``L`` transposed: the layout ``attention_kernel`` writes K^T's pointer tile in by default."""
    return gl.BlockedLayout([L.size_per_thread[1], 1], [L.threads_per_warp[1], L.threads_per_warp[0]],
                            [1, L.warps_per_cta[0]], [0, 1])


@triton.jit
def swap_pairs(x):
    """Each pair of neighbours swapped: a split and a join around reshapes."""
    a, b = tl.split(tl.reshape(x, (x.shape[0] // 2, 2)))
    return tl.reshape(tl.join(b, a), (x.shape[0], ))


@triton.jit
def swap_pairs_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, swap_pairs(tl.load(x_ptr + offs)))


@triton.jit
def doubled_row(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    return tl.load(x_ptr + offs, mask=offs < n) * 2


@triton.jit
def doubled_row_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Makes the same ``offs`` and ``offs < n`` as the function it calls: Triton's CSE keeps one."""
    offs = tl.arange(0, BLOCK)
    y = doubled_row(x_ptr, n, BLOCK)
    tl.store(y_ptr + offs, y, mask=offs < n)


@triton.jit
def gathered_row(idx_ptrs, x_ptr, mask):
    """A row gathered through an index tile: the second load's pointers are made from the first
    load's values, inside the function."""
    idx = tl.load(idx_ptrs, mask=mask, other=0)
    return tl.load(x_ptr + idx, mask=mask, other=0.0) * 2.0


@triton.jit
def gathered_rows_kernel(idx_ptr, x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        y = gathered_row(idx_ptr + row * n_cols + cols, x_ptr, mask)
        tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
