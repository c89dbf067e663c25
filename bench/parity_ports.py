"""Ports of upstream tutorial patterns, written for ``bench/parity.py``: each a hybrid kernel in one
direction and the all-Triton kernel it was ported from (vector add, matmul with an activation
helper, layer norm, attention with its inner loop as a region). The examples (``examples/``)
cover the rest: fused softmax both ways, layer norm and attention with a Triton host.

Each port is a ``Port``: its builds for a target (hybrid, triton, and gluon where written) and
the direction of its region (``gluon->triton``: a Gluon host calls Triton code).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.hopper import tma, warpgroup_mma, warpgroup_mma_wait

import hybrid
from examples import attention, matmul_wgmma, mma_handoff, softmax
from examples.layernorm import row_moments_triton
from examples.layouts import compile_pure, has_tma, row_layout, stores_from_dot_layout, tile_layout, vector_layout
from interop.targets import TARGETS

NUM_WARPS = 4


# -- vector add -------------------------------------------------------------------------------------
@triton.jit
def add(x, y):
    return x + y


@gluon.jit
def add_gluon_helper(x, y):
    return x + y


@hybrid.jit
@gluon.jit
def add_gluon_host(x_ptr, y_ptr, z_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    mask = offs < n
    gl.store(z_ptr + offs, add(gl.load(x_ptr + offs, mask=mask), gl.load(y_ptr + offs, mask=mask)), mask=mask)


@gluon.jit
def add_gluon(x_ptr, y_ptr, z_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    mask = offs < n
    gl.store(z_ptr + offs, gl.load(x_ptr + offs, mask=mask) + gl.load(y_ptr + offs, mask=mask), mask=mask)


@hybrid.jit
@triton.jit
def add_triton_host(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, add_gluon_helper(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)),
             mask=mask)


@triton.jit
def add_triton(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, add(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)), mask=mask)


# -- matmul with an activation helper ---------------------------------------------------------------
@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@gluon.jit
def leaky_relu_gluon(x):
    return gl.where(x >= 0, x, 0.01 * x)


@triton.jit
def mainloop(a_ptr, b_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * K + rn[None, :])
        acc = tl.dot(a, b, acc)
    return acc


@hybrid.jit
@gluon.jit
def matmul_act_gluon_host(a_ptr, b_ptr, c_ptr, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                          L: gl.constexpr, STORE_FROM_ACC: gl.constexpr):
    acc = leaky_relu(mainloop(a_ptr, b_ptr, K, BM, BN, BK))   # the activation stays in the MMA layout
    if STORE_FROM_ACC:   # from the MMA layout, as Triton stores on AMD
        S: gl.constexpr = acc.type.layout
    else:   # rows of L, where Triton converts before its store (NVIDIA)
        S: gl.constexpr = L
    rm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, S))
    rn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, S))
    gl.store(c_ptr + rm[:, None] * K + rn[None, :], gl.convert_layout(acc.to(gl.float16), S))


@hybrid.jit
@gluon.jit
def matmul_act_gluon_host_mma_store(a_ptr, b_ptr, c_ptr, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr):
    """The Gluon host storing the tile in the layout the Triton region returns it in, as the
    all-Triton kernel does on AMD (where it stores straight from the MFMA layout)."""
    acc = leaky_relu(mainloop(a_ptr, b_ptr, K, BM, BN, BK))
    L: gl.constexpr = acc.type.layout
    rm = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    rn = gl.program_id(1) * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    gl.store(c_ptr + rm[:, None] * K + rn[None, :], acc.to(gl.float16))


@hybrid.jit
@triton.jit
def matmul_act_triton_host(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = leaky_relu_gluon(mainloop(a_ptr, b_ptr, K, BM, BN, BK))
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * K + rn[None, :], acc.to(tl.float16))


@triton.jit
def matmul_act_triton(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = leaky_relu(mainloop(a_ptr, b_ptr, K, BM, BN, BK))
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * K + rn[None, :], acc.to(tl.float16))


# -- layer norm, Gluon host -------------------------------------------------------------------------
@hybrid.jit
@gluon.jit
def layernorm_gluon_host(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BM: gl.constexpr, BN: gl.constexpr,
                         L: gl.constexpr):
    rows = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    offsets = rows[:, None] * n_cols + cols[None, :]
    mask = (cols < n_cols)[None, :]
    x = gl.load(x_ptr + offsets, mask=mask, other=0.0).to(gl.float32)
    mean, rstd = row_moments_triton(x, n_cols, eps, BN)   # reductions: slices of L
    w = gl.load(w_ptr + cols, mask=cols < n_cols).to(gl.float32)
    b = gl.load(b_ptr + cols, mask=cols < n_cols).to(gl.float32)
    y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
    gl.store(y_ptr + offsets, y.to(gl.float16), mask=mask)


@triton.jit
def layernorm_triton(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offsets = rows[:, None] * n_cols + cols[None, :]
    mask = (cols < n_cols)[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean, rstd = row_moments_triton(x, n_cols, eps, BN)
    w = tl.load(w_ptr + cols, mask=cols < n_cols).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < n_cols).to(tl.float32)
    y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offsets, y.to(tl.float16), mask=mask)


# -- attention, Gluon host, the inner loop as a Triton region -----------------------------------------
# -- upstream 05-layer-norm's forward kernel, written with its row load as a helper --
@triton.jit
def load_row(X, row, stride, N, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    return tl.load(X + row * stride + cols, mask=cols < N, other=0.).to(tl.float32)


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x = load_row(X, row, stride, N, BLOCK_SIZE)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(tl.arange(0, BLOCK_SIZE) < N, x - mean, 0.)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + 1e-5)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + row * stride + cols, (x - mean) * rstd * w + b, mask=mask)


LAYER_NORM = {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32",
              "stride": "i32", "N": "i32"}


# -- upstream 05-layer-norm's forward kernel, its normalization and store as a helper (the kernel and
#    the helper both compute ``x - mean``, which Triton merges) --
@triton.jit
def normalize_store(Y_ptrs, x, mean, rstd, W_ptrs, B_ptrs, mask):
    w = tl.load(W_ptrs, mask=mask)
    b = tl.load(B_ptrs, mask=mask)
    y = (x - mean) * rstd * w + b
    tl.store(Y_ptrs, y, mask=mask)


@triton.jit
def layer_norm_fwd_store(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xbar = tl.where(mask, x - mean, 0.)
    var = tl.sum(xbar * xbar, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    normalize_store(Y + cols, x, mean, rstd, W + cols, B + cols, mask)


LAYER_NORM_STORE = {**LAYER_NORM, "eps": "fp32"}


# -- upstream 04-low-memory-dropout's seeded dropout, its masking and store as a helper (``tl.rand``'s
#    Philox rounds: 64-bit and unsigned scalar constants) --
@triton.jit
def dropout_store(out_ptrs, x, p, seed, offsets, mask):
    random = tl.rand(seed, offsets)
    keep = random > p
    tl.store(out_ptrs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    dropout_store(output_ptr + offsets, x, p, seed, offsets, mask)


SEEDED_DROPOUT = {"x_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32", "p": "fp32", "seed": "i32"}


# -- upstream 02-fused-softmax (persistent rows, a pipelined row loop), the row's softmax as a helper --
@triton.jit
def softmax_row(input_ptrs, mask):
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    return numerator / tl.sum(numerator, axis=0)


@triton.jit
def softmax_rows(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                 num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        softmax_output = softmax_row(input_ptr + row_idx * input_row_stride + col_offsets, mask)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output, mask=mask)


@triton.jit
def softmax_row_loop(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                     BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    """The same kernel's loop moved into a function of its own, so that a port takes it, and the
    pipelining Triton gives it, whole (what the port of ``softmax_row`` says to do)."""
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        softmax_output = softmax_row(input_ptr + row_idx * input_row_stride + col_offsets, mask)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output, mask=mask)


@triton.jit
def softmax_rows_by_loop(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                         BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    softmax_row_loop(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE,
                     num_stages)


SOFTMAX_ROWS = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
                "n_rows": "i32", "n_cols": "i32"}


# -- upstream 05-layer-norm forward's mean: a loop over the row's blocks, the block's load as a helper; as the
# tutorial writes the loop (``range``) and pipelined (``tl.range(..., num_stages=3)``) --
@triton.jit
def row_block(ptrs, mask):
    return tl.load(ptrs, mask=mask, other=0.).to(tl.float32)


@triton.jit
def layer_norm_mean(X, Mean, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        _mean += row_block(X + cols, cols < N)
    tl.store(Mean + row, tl.sum(_mean, axis=0) / N)


@triton.jit
def layer_norm_mean_pipelined(X, Mean, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in tl.range(0, N, BLOCK_SIZE, num_stages=3):
        cols = off + tl.arange(0, BLOCK_SIZE)
        _mean += row_block(X + cols, cols < N)
    tl.store(Mean + row, tl.sum(_mean, axis=0) / N)


LAYER_NORM_MEAN = {"X": "*fp16", "Mean": "*fp32", "stride": "i32", "N": "i32"}


# -- upstream 05-layer-norm's backward dx kernel, its locked accumulation of the partial dW/dB as a helper --
@triton.jit
def accumulate_partial(DW, DB, Lock, Count, partial_dw, partial_db, mask):
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def layer_norm_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    accumulate_partial(DW, DB, Lock, Count, (dy * xhat).to(w.dtype), dy.to(w.dtype), mask)


LAYER_NORM_BWD = {"DX": "*fp16", "DY": "*fp16", "DW": "*fp16", "DB": "*fp16", "X": "*fp16", "W": "*fp16",
                  "Mean": "*fp32", "Rstd": "*fp32", "Lock": "*i32", "stride": "i32", "N": "i32"}


# -- upstream 03-matrix-multiplication, its K loop written as a helper taking the pointer tiles --
@triton.jit
def k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
           BLOCK_SIZE_K: tl.constexpr):
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    return accumulator


@triton.jit
def matmul_k_loop(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = k_loop(a_ptrs, b_ptrs, K, stride_ak, stride_bk, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


MATMUL_K_LOOP = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                 **{f"stride_{s}": "i32" for s in ("am", "ak", "bk", "bn", "cm", "cn")}}
MATMUL_K_LOOP_TILES = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}


@hybrid.jit
@gluon.jit
def attention_gluon_host(Q, K, V, O, sm_scale, N_CTX, HEAD_DIM: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                         L: gl.constexpr, STORE_FROM_ACC: gl.constexpr):
    base = gl.program_id(1).to(gl.int64) * N_CTX * HEAD_DIM
    offs_m = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    offs_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, L))
    offs_n = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    LT: gl.constexpr = gl.BlockedLayout([L.size_per_thread[1], 1], [L.threads_per_warp[1], L.threads_per_warp[0]],
                                        [1, L.warps_per_cta[0]], [0, 1])   # L transposed: K^T's columns
    q = gl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    offs_dt = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(1, LT))
    offs_nt = gl.arange(0, BN, layout=gl.SliceLayout(0, LT))
    k_ptrs = K + base + offs_nt[None, :] * HEAD_DIM + offs_dt[:, None]
    offs_nv = gl.arange(0, BN, layout=gl.SliceLayout(1, L))
    v_ptrs = V + base + offs_nv[:, None] * HEAD_DIM + offs_d[None, :]
    m_i = gl.zeros([BM], gl.float32, layout=gl.SliceLayout(1, L)) - float("inf")
    l_i = gl.zeros([BM], gl.float32, layout=gl.SliceLayout(1, L)) + 1.0
    acc = gl.zeros([BM, HEAD_DIM], gl.float32, layout=L)
    acc, m_i, l_i = attention.kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, offs_n, sm_scale * 1.44269504, 0,
                                      N_CTX, HEAD_DIM, BN, False)
    l_i = gl.convert_layout(l_i, gl.SliceLayout(1, acc.type.layout))
    o = (acc / l_i[:, None]).to(gl.float16)
    if not STORE_FROM_ACC:   # rows of 16-byte vectors, as Triton stores where it converts first
        o = gl.convert_layout(o, L)
    S: gl.constexpr = o.type.layout
    rows = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, S))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, S))
    gl.store(O + base + rows[:, None] * HEAD_DIM + cols[None, :], o)


# -- softmax_gluon_stats with the Gluon statistics computed in the layout the Triton host hands over --
@gluon.jit
def row_stats_in_host_layout(x, n_cols, BN: gl.constexpr):
    """examples/softmax_gluon_stats.py's statistics without the author's ``convert_layout``: the
    masking and both reductions in the layout the tile arrives in (Gluon code generic over it)."""
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, x.type.layout))
    x = gl.where(cols[None, :] < n_cols, x, float("-inf"))
    m = gl.max(x, axis=1)
    return m, gl.sum(gl.exp(x - m[:, None]), axis=1)


@hybrid.jit
@triton.jit
def softmax_host_layout_stats(x_ptr, y_ptr, n_rows, n_cols, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    m, s = row_stats_in_host_layout(x, n_cols, BN)
    tl.store(y_ptr + offsets, tl.exp(x - m[:, None]) / s[:, None], mask=mask)


def _softmax_host_layout_stats(target: str) -> dict:
    tiles = {"BM": softmax.BM, "BN": softmax.BN}
    return {"hybrid": hybrid.compile(softmax_host_layout_stats, softmax.SIGNATURE, tiles, target,
                                     num_warps=softmax.NUM_WARPS),
            "triton": softmax.build_triton(target)}


# -- mma_handoff with the MMA's A operand where all-Triton keeps it: registers (wgmma), tensor memory (tcgen05) --
@hybrid.takes(a="AL", b=hybrid.shared("SB"))
@gluon.jit
def wgmma_tile_a_in_registers(a, b, AL: gl.constexpr, SB: gl.constexpr, ACC: gl.constexpr, BM: gl.constexpr,
                              BN: gl.constexpr):
    """sm90a: A arrives as a wgmma register operand (the host converts it, as all-Triton does
    through shared memory), B in NVMMA shared memory."""
    acc = warpgroup_mma(a, b, gl.zeros([BM, BN], gl.float32, ACC), is_async=True)
    return warpgroup_mma_wait(num_outstanding=0, deps=[acc])


@hybrid.takes(a="AL", b=hybrid.shared("SB"))
@gluon.jit
def tcgen05_tile_a_in_tmem(a, b, AL: gl.constexpr, SB: gl.constexpr, ACC: gl.constexpr, BM: gl.constexpr,
                           BN: gl.constexpr):
    """sm100a: A is stored into tensor memory from registers (``tcgen05.st``), B in NVMMA shared memory."""
    a_tmem = blackwell.allocate_tensor_memory(gl.float16, a.type.shape, blackwell.TensorMemoryLayout(
        block=(BM, a.type.shape[1]), col_stride=1), a)
    return mma_handoff.tcgen05_product(a_tmem, b, ACC, BM, BN)


@hybrid.jit
@triton.jit
def mma_a_operand_kernel(a_ptr, s_ptr, b_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr,
                         MMA: tl.constexpr, AL: tl.constexpr, SB: tl.constexpr, ACC: tl.constexpr):
    """examples/mma_handoff.py's kernel with A handed over where all-Triton's MMA reads it."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = mma_handoff.scaled_rows(a_ptr, s_ptr, M, pid_m, BM, K)
    b = mma_handoff.b_tile(b_ptr, N, pid_n, BN, K)
    if MMA == "wgmma":
        c = wgmma_tile_a_in_registers(a, b, AL, SB, ACC, BM, BN)
    elif MMA == "tcgen05":
        c = tcgen05_tile_a_in_tmem(a, b, AL, SB, ACC, BM, BN)
    else:
        c = tl.dot(a, b)
    mma_handoff.store_c(c_ptr, c, M, N, pid_m, pid_n, BM, BN)


def _mma_a_operand(target: str) -> dict:
    m = mma_handoff
    given = m.constexprs(target)
    if given["MMA"] == "wgmma":
        a_layout = gl.DotOperandLayout(operand_index=0, parent=given["ACC"], k_width=2)
    elif given["MMA"] == "tcgen05":
        a_layout = gl.BlockedLayout([1, m.K], [32, 1], [m.NUM_WARPS, 1], [0, 1])   # tcgen05.st 32x32b
    else:
        a_layout = None
    constexprs = {**{k: given[k] for k in ("BM", "BN", "K", "MMA", "SB", "ACC")}, "AL": a_layout}
    return {"hybrid": hybrid.compile(mma_a_operand_kernel, m.SIGNATURE, constexprs, target, num_warps=m.NUM_WARPS,
                                     divisible=m.DIVISIBLE),
            "triton": m.build_triton(target)}

# -- persistent matmul through tensor descriptors (upstream's 09-persistent-matmul, its
#    matmul_kernel_descriptor_persistent): the hot part, descriptors made on the device, the walk
#    over output tiles, the K loop and the epilogue's store, is one @triton.jit helper. (A helper
#    taking a Triton kernel's descriptors takes them as Gluon's TMA descriptors on sm90a/sm100a,
#    as hybrid.PointerDescriptor elsewhere: tests/test_port_ttgir.py ports k_loop_desc so.)
@triton.jit
def tile_pids(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    """The grouped ordering of the tutorial's ``_compute_pid``: (pid_m, pid_n) of a tile."""
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def persistent_tiles_desc(a_ptr, b_ptr, c_ptr, M, N, K, start_pid, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """The tutorial kernel's body (no epilogue subtiling, no warp specialization): program
    ``start_pid`` walks every NUM_SMS-th output tile, A and B tiles loaded and C stored through
    device-made descriptors (TMA where the target has it), B stored N-major as in the tutorial."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = tile_pids(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        offs_am = pid_m * BM
        offs_bn = pid_n * BN
        acc = k_loop_desc(a_desc, b_desc, offs_am, offs_bn, k_tiles, BM, BN, BK)
        c_desc.store([offs_am, offs_bn], acc.to(tl.float16))


@triton.jit
def matmul_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """All Triton: one program per SM (launched on NUM_SMS programs)."""
    persistent_tiles_desc(a_ptr, b_ptr, c_ptr, M, N, K, tl.program_id(0), BM, BN, BK, GROUP_M, NUM_SMS)


@hybrid.jit
@gluon.jit
def matmul_descriptor_persistent_gluon_host(a_ptr, b_ptr, c_ptr, M, N, K, BM: gl.constexpr, BN: gl.constexpr,
                                            BK: gl.constexpr, GROUP_M: gl.constexpr, NUM_SMS: gl.constexpr):
    """The same kernel with a Gluon host: the helper is a Triton region."""
    persistent_tiles_desc(a_ptr, b_ptr, c_ptr, M, N, K, gl.program_id(0), BM, BN, BK, GROUP_M, NUM_SMS)



@triton.jit
def k_loop_desc(a_desc, b_desc, offs_am, offs_bn, k_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The tutorial's K loop: one output tile's fp32 accumulator, A and B loaded through the
    descriptors the caller made."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(k_tiles):
        offs_k = ki * BK
        a = a_desc.load([offs_am, offs_k])
        b = b_desc.load([offs_bn, offs_k])
        acc = tl.dot(a, b.T, acc)
    return acc


@triton.jit
def store_tile_desc(c_desc, acc, offs_cm, offs_cn):
    """The tutorial's epilogue: the accumulator as fp16, stored through C's descriptor."""
    c_desc.store([offs_cm, offs_cn], acc.to(tl.float16))


@hybrid.jit
@gluon.jit
def matmul_descriptor_persistent_gluon_tma(a_ptr, b_ptr, c_ptr, M, N, K, BM: gl.constexpr, BN: gl.constexpr,
                                           BK: gl.constexpr, GROUP_M: gl.constexpr, NUM_SMS: gl.constexpr):
    """The tutorial's kernel with a Gluon host that makes the TMA descriptors (sm90a, sm100a) and
    hands them to the K loop and the epilogue, Triton helpers as upstream wrote them."""
    start_pid = gl.program_id(0)
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_tiles = gl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    ab_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, BK], gl.float16)
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, BN], gl.float16)
    a_desc = tma.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK], ab_layout)
    b_desc = tma.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK], ab_layout)
    c_desc = tma.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN], c_layout)
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = tile_pids(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        acc = k_loop_desc(a_desc, b_desc, pid_m * BM, pid_n * BN, k_tiles, BM, BN, BK)
        store_tile_desc(c_desc, acc, pid_m * BM, pid_n * BN)


@triton.jit
def matmul_descriptor_persistent_tma(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                     BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """``matmul_descriptor_persistent_gluon_tma`` all Triton: the kernel makes the descriptors on the
    device and hands them to the K loop and the epilogue (whose ports take them as Gluon's TMA
    descriptors on sm90a and sm100a, as ``hybrid.PointerDescriptor`` elsewhere)."""
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = tile_pids(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        acc = k_loop_desc(a_desc, b_desc, pid_m * BM, pid_n * BN, k_tiles, BM, BN, BK)
        store_tile_desc(c_desc, acc, pid_m * BM, pid_n * BN)


PERSISTENT_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
PERSISTENT_CONSTEXPRS = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "NUM_SMS": 132}
PERSISTENT_DIVISIBLE = ("M", "N", "K")


# -- matmul_wgmma with the Gluon pipeline's buffers as many as Triton's (3 stages) --
def _wgmma_three_stages(target: str) -> dict:
    """examples/matmul_wgmma.py's Gluon host with 3 stages (1 load in flight) where the example has
    4 (2 in flight): the 3 buffers Triton's pipeline allocates for its ``num_stages=3``."""
    return {"hybrid": hybrid.compile(matmul_wgmma.matmul_kernel, matmul_wgmma.SIGNATURE,
                                     {**matmul_wgmma.constexprs(target), "STAGES": 3}, target,
                                     num_warps=matmul_wgmma.NUM_WARPS, divisible=matmul_wgmma.DIVISIBLE),
            "triton": matmul_wgmma.build_triton(target)}


def _persistent_descriptors(target: str) -> dict:
    """Where the target has TMA, the Gluon host makes the descriptors for the Triton K loop and
    epilogue; elsewhere the descriptors are made in the Triton region (Gluon has none there)."""
    host = matmul_descriptor_persistent_gluon_tma if has_tma(target) else matmul_descriptor_persistent_gluon_host
    return {"hybrid": hybrid.compile(host, PERSISTENT_SIGNATURE, PERSISTENT_CONSTEXPRS, target, num_warps=NUM_WARPS,
                                     divisible=PERSISTENT_DIVISIBLE),
            "triton": compile_pure(matmul_descriptor_persistent, PERSISTENT_SIGNATURE, PERSISTENT_CONSTEXPRS, target,
                                   NUM_WARPS, divisible=PERSISTENT_DIVISIBLE)}


@dataclass(frozen=True)
class Port:
    name: str
    direction: str   # "gluon->triton": a Gluon host calls Triton code; "triton->gluon" the other way
    builds: Callable[[str], dict]   # target -> {variant: compiled}
    targets: tuple = ()             # the targets it is built for (all where empty)


def _vector_add(target: str, host: str) -> dict:
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"}
    layout = {"L": vector_layout(target, NUM_WARPS)}
    pure = {"triton": compile_pure(add_triton, sig, {"BLOCK": 1024}, target, NUM_WARPS)}
    if host == "gluon":
        return {"hybrid": hybrid.compile(add_gluon_host, sig, {"BLOCK": 1024, **layout}, target, num_warps=NUM_WARPS),
                "gluon": compile_pure(add_gluon, sig, {"BLOCK": 1024, **layout}, target, NUM_WARPS), **pure}
    return {"hybrid": hybrid.compile(add_triton_host, sig, {"BLOCK": 1024}, target, num_warps=NUM_WARPS), **pure}


MATMUL_TILES = {"BM": 128, "BN": 128, "BK": 64}


def matmul_act_gluon_host_constexprs(target: str) -> dict:
    """``matmul_act_gluon_host``'s constexprs: the tiles, its store layout, where it stores from."""
    return {**MATMUL_TILES, "L": tile_layout(target, NUM_WARPS), "STORE_FROM_ACC": stores_from_dot_layout(target)}


def _matmul_act(target: str, host: str) -> dict:
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
    tiles = MATMUL_TILES
    pure = {"triton": compile_pure(matmul_act_triton, sig, tiles, target, NUM_WARPS, divisible=("K", ))}
    if host == "gluon":
        fb = hybrid.compile(matmul_act_gluon_host, sig, matmul_act_gluon_host_constexprs(target), target,
                            num_warps=NUM_WARPS, divisible=("K", ))
    elif host == "gluon, MMA-layout store":
        fb = hybrid.compile(matmul_act_gluon_host_mma_store, sig, tiles, target, num_warps=NUM_WARPS,
                            divisible=("K", ))
    else:
        fb = hybrid.compile(matmul_act_triton_host, sig, tiles, target, num_warps=NUM_WARPS, divisible=("K", ))
    return {"hybrid": fb, **pure}


def _layernorm(target: str) -> dict:
    sig = {"x_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "n_cols": "i32", "eps": "fp32"}
    tiles = {"BM": 4, "BN": 1024}
    return {"hybrid": hybrid.compile(layernorm_gluon_host, sig, {**tiles, "L": row_layout(target, NUM_WARPS, 1024, 8)},
                                     target, num_warps=NUM_WARPS, divisible=("n_cols", )),
            "triton": compile_pure(layernorm_triton, sig, tiles, target, NUM_WARPS, divisible=("n_cols", ))}


def _attention(target: str) -> dict:
    tiles = attention.tiles(target, 64)
    tiles = {k: v for k, v in tiles.items() if k in ("BM", "BN")}
    options = attention.options(target, 64)
    layout = row_layout(target, options.get("num_warps", NUM_WARPS), 64, vec=8)   # 16-byte rows, as Triton loads
    hybrid_build = hybrid.compile(attention_gluon_host, attention.SIGNATURE,
                                  {"HEAD_DIM": 64, **tiles, "L": layout, "STORE_FROM_ACC": stores_from_dot_layout(target)},
                                  target, divisible=attention.DIVISIBLE,
                                  **options)
    return {"hybrid": hybrid_build, "triton": attention.build_triton(target, 64)}


PORTS = (
    Port("vector_add", "gluon->triton", lambda t: _vector_add(t, "gluon")),
    Port("vector_add", "triton->gluon", lambda t: _vector_add(t, "triton")),
    Port("matmul_activation", "gluon->triton", lambda t: _matmul_act(t, "gluon")),
    Port("matmul_activation", "triton->gluon", lambda t: _matmul_act(t, "triton")),
    Port("matmul_activation_mma_store", "gluon->triton", lambda t: _matmul_act(t, "gluon, MMA-layout store")),
    Port("layernorm", "gluon->triton", _layernorm),
    Port("attention_inner_loop", "gluon->triton", _attention),
    Port("mma_handoff_a_operand", "triton->gluon", _mma_a_operand),
    Port("softmax_gluon_stats_host_layout", "triton->gluon", _softmax_host_layout_stats),
    Port("persistent_matmul_descriptors", "gluon->triton", _persistent_descriptors),
    Port("matmul_wgmma_three_stages", "gluon->triton", _wgmma_three_stages, ("sm90a", )),
)
__all__ = ["PORTS", "Port", "TARGETS"]


# -- upstream's fused attention forward (06-fused-attention, simplified as tests/conformance_kernels.py
#    runs it: device-made descriptors, no warp specialization): its inner loop, _attn_fwd_inner, takes
#    the K and V descriptors (TMA descriptors on sm90a/sm100a, hybrid.PointerDescriptor elsewhere)
@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, STAGE: tl.constexpr, offs_m, offs_n, N_CTX: tl.constexpr):
    if STAGE == 1:     # causal, blocks left of the diagonal
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:   # causal, the diagonal block
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
    else:              # not causal
        lo, hi = 0, N_CTX
    offsetk_y = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N):
        k = desc_k.load([offsetk_y, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        v = desc_v.load([offsetk_y, 0])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_ij
        offsetk_y += BLOCK_N
    return acc, l_i, m_i



@triton.jit
def attn_fwd(sm_scale, M, Z, H, q_ptr, k_ptr, v_ptr, o_ptr, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(q_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(k_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(v_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(o_ptr, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504   # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M,
                                        BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M,
                                        BLOCK_N, 2, offs_m, offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qo_offset_y, 0], (acc / l_i[:, None]).to(tl.float16))


ATTN_SIGNATURE = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "q_ptr": "*fp16", "k_ptr": "*fp16",
                  "v_ptr": "*fp16", "o_ptr": "*fp16"}
ATTN_CONSTEXPRS = {"N_CTX": 128, "HEAD_DIM": 64, "BLOCK_M": 32, "BLOCK_N": 32, "STAGE": 1}   # not causal


# -- upstream's persistent matmul epilogue subtiled (09-persistent-matmul, EPILOGUE_SUBTILE): the
#    accumulator split in two halves along N, each stored through C's descriptor of half-width blocks
@triton.jit
def store_tile_subtiled(c_desc, acc, offs_cm, offs_cn, BN: tl.constexpr):
    """The tutorial's subtiled epilogue."""
    acc = tl.reshape(acc, (acc.shape[0], 2, BN // 2))
    acc = tl.permute(acc, (0, 2, 1))
    acc0, acc1 = tl.split(acc)
    c_desc.store([offs_cm, offs_cn], acc0.to(tl.float16))
    c_desc.store([offs_cm, offs_cn + BN // 2], acc1.to(tl.float16))


@triton.jit
def matmul_descriptor_persistent_subtiled(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                          BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """``matmul_descriptor_persistent_tma`` with the tutorial's subtiled epilogue."""
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN // 2])
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = tile_pids(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        acc = k_loop_desc(a_desc, b_desc, pid_m * BM, pid_n * BN, k_tiles, BM, BN, BK)
        store_tile_subtiled(c_desc, acc, pid_m * BM, pid_n * BN, BN)


# -- upstream's fused attention backward (06-fused-attention, MIT license: triton-lang/triton,
#    python/tutorials/06-fused-attention.py), as the tutorial writes it (causal only): _attn_bwd calls
#    _attn_bwd_dkdv and _attn_bwd_dq each twice, the diagonal blocks masked on tiles BLK_SLICE_FACTOR
#    times smaller (MASK=True), then the blocks below it (MASK=False): two sites Triton lowers differently
@triton.jit
def _attn_bwd_preprocess(O, DO, Delta, Z, H, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_n = tl.arange(0, HEAD_DIM)
    # load
    o = tl.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tl.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :]).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    # write-back
    tl.store(Delta + off_hz * N_CTX + off_m, delta)


# The main inner-loop logic for computing dK and dV.
@triton.jit
def _attn_bwd_dkdv(dk, dv,  #
                   Q, k, v, sm_scale,  #
                   DO,  #
                   M, D,  #
                   # shared by Q/K/V/DO.
                   stride_tok, stride_d,  #
                   H, N_CTX, BLOCK_M1: tl.constexpr,  #
                   BLOCK_N1: tl.constexpr,  #
                   HEAD_DIM: tl.constexpr,  #
                   # Filled in by the wrapper.
                   start_n, start_m, num_steps,  #
                   MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    # BLOCK_N1 must be a multiple of BLOCK_M1, otherwise the code wouldn't work.
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for blk_idx in range(num_steps):
        qT = tl.load(qT_ptrs)
        # Load m before computing qk to reduce pipeline stall.
        offs_m = curr_m + tl.arange(0, BLOCK_M1)
        m = tl.load(M + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - m[None, :])
        # Autoregressive masking.
        if MASK:
            mask = (offs_m[None, :] >= offs_n[:, None])
            pT = tl.where(mask, pT, 0.0)
        do = tl.load(do_ptrs)
        # Compute dV.
        ppT = pT
        ppT = ppT.to(tl.float16)
        dv += tl.dot(ppT, do)
        # D (= delta) is pre-divided by ds_scale.
        Di = tl.load(D + offs_m)
        # Compute dP and dS.
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dsT = dsT.to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        # Increment pointers.
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


# the main inner-loop logic for computing dQ
@triton.jit
def _attn_bwd_dq(dq, q, K, V,  #
                 do, m, D,
                 # shared by Q/K/V/DO.
                 stride_tok, stride_d,  #
                 H, N_CTX,  #
                 BLOCK_M2: tl.constexpr,  #
                 BLOCK_N2: tl.constexpr,  #
                 HEAD_DIM: tl.constexpr,
                 # Filled in by the wrapper.
                 start_m, start_n, num_steps,  #
                 MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    offs_k = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    # D (= delta) is pre-divided by ds_scale.
    Di = tl.load(D + offs_m)
    # BLOCK_M2 must be a multiple of BLOCK_N2, otherwise the code wouldn't work.
    tl.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for blk_idx in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        # Autoregressive masking.
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N2)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(mask, p, 0.0)
        # Compute dP and dS.
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        ds = ds.to(tl.float16)
        # Compute dQ.
        # NOTE: We need to de-scale dq in the end, because kT was pre-scaled.
        dq += tl.dot(ds, tl.trans(kT))
        # Increment pointers.
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@triton.jit
def _attn_bwd(Q, K, V, sm_scale,  #
              DO,  #
              DQ, DK, DV,  #
              M, D,
              # shared by Q/K/V/DO.
              stride_z, stride_h, stride_tok, stride_d,  #
              H, N_CTX,  #
              BLOCK_M1: tl.constexpr,  #
              BLOCK_N1: tl.constexpr,  #
              BLOCK_M2: tl.constexpr,  #
              BLOCK_N2: tl.constexpr,  #
              BLK_SLICE_FACTOR: tl.constexpr,  #
              HEAD_DIM: tl.constexpr):
    LN2: tl.constexpr = 0.6931471824645996  # = ln(2)

    bhid = tl.program_id(2)
    off_chz = (bhid * N_CTX).to(tl.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tl.int64)
    pid = tl.program_id(0)

    # offset pointers for batch/head
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz

    # load scales
    offs_k = tl.arange(0, HEAD_DIM)

    start_n = pid * BLOCK_N1
    start_m = start_n

    MASK_BLOCK_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tl.arange(0, BLOCK_N1)

    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)

    # load K and V: they stay in SRAM throughout the inner loop.
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)

    num_steps = BLOCK_N1 // MASK_BLOCK_M1

    dk, dv = _attn_bwd_dkdv(dk, dv,  #
                            Q, k, v, sm_scale,  #
                            DO,  #
                            M, D,  #
                            stride_tok, stride_d,  #
                            H, N_CTX,  #
                            MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
                            start_n, start_m, num_steps,  #
                            MASK=True  #
                            )

    start_m += num_steps * MASK_BLOCK_M1
    num_steps = (N_CTX - start_m) // BLOCK_M1

    # Compute dK and dV for non-masked blocks.
    dk, dv = _attn_bwd_dkdv(  #
        dk, dv,  #
        Q, k, v, sm_scale,  #
        DO,  #
        M, D,  #
        stride_tok, stride_d,  #
        H, N_CTX,  #
        BLOCK_M1, BLOCK_N1, HEAD_DIM,  #
        start_n, start_m, num_steps,  #
        MASK=False  #
    )

    dv_ptrs = DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dv_ptrs, dv)

    # Write back dK.
    dk *= sm_scale
    dk_ptrs = DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dk_ptrs, dk)

    # THIS BLOCK DOES DQ:
    start_m = pid * BLOCK_M2
    end_n = start_m + BLOCK_M2

    MASK_BLOCK_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tl.arange(0, BLOCK_M2)

    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)

    m = tl.load(M + offs_m)
    m = m[:, None]

    # Compute dQ for masked (diagonal) blocks.
    num_steps = BLOCK_M2 // MASK_BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V,  #
                      do, m, D,  #
                      stride_tok, stride_d,  #
                      H, N_CTX,  #
                      BLOCK_M2, MASK_BLOCK_N2, HEAD_DIM,  #
                      start_m, end_n - num_steps * MASK_BLOCK_N2, num_steps,  #
                      MASK=True  #
                      )
    end_n -= num_steps * MASK_BLOCK_N2
    # stage 2
    num_steps = end_n // BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V,  #
                      do, m, D,  #
                      stride_tok, stride_d,  #
                      H, N_CTX,  #
                      BLOCK_M2, BLOCK_N2, HEAD_DIM,  #
                      start_m, end_n - num_steps * BLOCK_N2, num_steps,  #
                      MASK=False  #
                      )
    # Write back dQ.
    dq_ptrs = DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    dq *= LN2
    tl.store(dq_ptrs, dq)


# Sizes the interpreter runs (upstream: BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 32, 128, 128, 32 on
# N_CTX >= 1024): with N_CTX=128 and BLOCK_N1 = BLOCK_M2 = 64 each program's masked and unmasked
# calls both loop. stride_d is 1, which Triton's JIT specializes as a constant; upstream launches
# with num_warps=4, num_stages=5.
ATTN_BWD_SIGNATURE = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
                      "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32",
                      "stride_h": "i32", "stride_tok": "i32", "H": "i32", "N_CTX": "i32"}
ATTN_BWD_CONSTEXPRS = {"stride_d": 1, "BLOCK_M1": 32, "BLOCK_N1": 64, "BLOCK_M2": 64, "BLOCK_N2": 32,
                       "BLK_SLICE_FACTOR": 2, "HEAD_DIM": 64}
ATTN_BWD_OPTIONS = {"num_warps": 4, "num_stages": 5, "divisible": ("stride_z", "stride_h", "stride_tok", "N_CTX")}
