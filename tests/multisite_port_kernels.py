"""Triton helpers that their kernel calls at more than one site, in the style of upstream's
attention backward (tutorial 06): ``_attn_bwd_dkdv`` and ``_attn_bwd_dq`` are called first with
``MASK=True`` on 16-row tiles (the diagonal blocks), then with ``MASK=False`` on 32-row tiles;
a port written for the first site alone and swapped into both is wrong at the second
(tests/test_port_sites.py)."""
import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid

SIGNATURE = {"x_ptr": "*fp32", "y1_ptr": "*fp32", "y2_ptr": "*fp32"}
CONSTEXPRS = {"BLOCK_N": 32, "MASK_BLOCK": 16, "BLOCK_M": 32}
CHECK_SIZE = (2, )   # unmasked steps after the masked diagonal blocks: BLOCK_N + 2 * BLOCK_M rows are read


@triton.jit
def accumulate_rows(acc, x_ptr, start, n_steps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    """Sum rows ``start .. start + n_steps * BLOCK_M`` of a ``BLOCK_N``-wide tile into ``acc``,
    keeping only the lower triangle where ``MASK`` (as the backward's diagonal blocks do)."""
    offs_n = tl.arange(0, BLOCK_N)
    curr = start
    for _ in range(n_steps):
        offs_m = curr + tl.arange(0, BLOCK_M)
        x = tl.load(x_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :])
        if MASK:
            x = tl.where(offs_m[:, None] >= offs_n[None, :], x, 0.0)
        acc += tl.sum(x, axis=0)
        curr += BLOCK_M
    return acc


@triton.jit
def k_two_phase(x_ptr, y1_ptr, y2_ptr, BLOCK_N: tl.constexpr, MASK_BLOCK: tl.constexpr, BLOCK_M: tl.constexpr):
    """Each site's sum into an output of its own (``y1``: the masked diagonal blocks, ``y2``: the
    unmasked rows after them), so a comparison shows each site's result."""
    cols = tl.arange(0, BLOCK_N)
    acc = accumulate_rows(tl.zeros([BLOCK_N], dtype=tl.float32), x_ptr, 0, BLOCK_N // MASK_BLOCK, MASK_BLOCK, BLOCK_N,
                          True)
    tl.store(y1_ptr + cols, acc)
    acc = accumulate_rows(tl.zeros([BLOCK_N], dtype=tl.float32), x_ptr, BLOCK_N, 2, BLOCK_M, BLOCK_N, False)
    tl.store(y2_ptr + cols, acc)


@hybrid.jit
@gluon.jit
def k_two_phase_gluon(x_ptr, y1_ptr, y2_ptr, BLOCK_N: gl.constexpr, MASK_BLOCK: gl.constexpr, BLOCK_M: gl.constexpr):
    """``k_two_phase`` with a Gluon host: each call a Triton region (32-thread warps, 4 warps)."""
    L: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    cols = gl.arange(0, BLOCK_N, layout=L)
    acc = accumulate_rows(gl.zeros([BLOCK_N], gl.float32, layout=L), x_ptr, 0, BLOCK_N // MASK_BLOCK, MASK_BLOCK,
                          BLOCK_N, True)
    gl.store(y1_ptr + cols, gl.convert_layout(acc, L))
    acc = accumulate_rows(gl.zeros([BLOCK_N], gl.float32, layout=L), x_ptr, BLOCK_N, 2, BLOCK_M, BLOCK_N, False)
    gl.store(y2_ptr + cols, gl.convert_layout(acc, L))


@triton.jit
def scale_by_row_sums(x):
    """No constexpr at all: its two sites differ only in the tile's shape."""
    return x * tl.sum(x, axis=1)[:, None]


@triton.jit
def k_two_shapes(x_ptr, y1_ptr, y2_ptr, N: tl.constexpr):
    """A half tile through one site, a whole tile through the other."""
    cols = tl.arange(0, N)
    half = tl.arange(0, N // 2)
    a = tl.load(x_ptr + half[:, None] * N + cols[None, :])
    b = tl.load(x_ptr + cols[:, None] * N + cols[None, :])
    tl.store(y1_ptr + half[:, None] * N + cols[None, :], scale_by_row_sums(a))
    tl.store(y2_ptr + cols[:, None] * N + cols[None, :], scale_by_row_sums(b))


def problem(steps: int, device: str = "cpu") -> dict:
    """Random rows for both sites (``steps`` unmasked steps after the diagonal blocks), NaN outputs."""
    n = CONSTEXPRS["BLOCK_N"]
    x = torch.randn(n + steps * CONSTEXPRS["BLOCK_M"], n, device=device)
    return {"x": x, "y1": torch.full((n, ), float("nan"), device=device),
            "y2": torch.full((n, ), float("nan"), device=device)}


def run(variant: str, p: dict, target: str):
    """One launch of ``k_two_phase`` (``variant`` ``triton``), or the torch reference."""
    x, n, m = p["x"], CONSTEXPRS["BLOCK_N"], CONSTEXPRS["BLOCK_M"]
    if variant == "triton":
        k_two_phase[(1, )](x, p["y1"], p["y2"], num_warps=4, **CONSTEXPRS)
        return p["y1"], p["y2"]
    return x[:n].tril().sum(0), x[n:n + 2 * m].sum(0)


@triton.jit
def rounded(x, DT: tl.constexpr):
    """Its two sites differ only in a dtype constexpr, which the port's IR folds away."""
    return x.to(DT).to(tl.float32)


@triton.jit
def k_two_roundings(x_ptr, y1_ptr, y2_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y1_ptr + offs, rounded(x, tl.float16))
    tl.store(y2_ptr + offs, rounded(x, tl.bfloat16))


@triton.jit
def k_two_shapes_maybe(x_ptr, y1_ptr, y2_ptr, whole, N: tl.constexpr):
    """``k_two_shapes`` whose second site runs only where ``whole`` is set (at run time)."""
    cols = tl.arange(0, N)
    half = tl.arange(0, N // 2)
    a = tl.load(x_ptr + half[:, None] * N + cols[None, :])
    tl.store(y1_ptr + half[:, None] * N + cols[None, :], scale_by_row_sums(a))
    if whole != 0:
        b = tl.load(x_ptr + cols[:, None] * N + cols[None, :])
        tl.store(y2_ptr + cols[:, None] * N + cols[None, :], scale_by_row_sums(b))


@triton.jit
def exp2_f32(x):
    """Elementwise: its two sites differ in rank alone (fla's ``exp2``, on a row of gates and on
    the square tile of their differences)."""
    return tl.math.exp2(x.to(tl.float32))


@triton.jit
def k_two_ranks(x_ptr, y1_ptr, y2_ptr, N: tl.constexpr):
    rows = tl.arange(0, N)
    g = tl.load(x_ptr + rows)
    tl.store(y1_ptr + rows, exp2_f32(g))
    tl.store(y2_ptr + rows[:, None] * N + rows[None, :], exp2_f32(g[:, None] - g[None, :]))


@hybrid.jit
@gluon.jit
def k_two_layouts(x_ptr, y1_ptr, y2_ptr, N: gl.constexpr):
    """One tile, the same shape and no constexpr, through one site in a row-major layout and
    through the other in a column-major one (32-thread warps, 4 warps): the layouts alone tell
    the sites apart, as a Gluon host has them."""
    ROWS: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    COLS: gl.constexpr = gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])
    r = gl.arange(0, N, layout=gl.SliceLayout(1, ROWS))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, ROWS))
    offs = r[:, None] * N + c[None, :]
    gl.store(y1_ptr + offs, scale_by_row_sums(gl.load(x_ptr + offs)))
    offs = gl.convert_layout(offs, COLS)
    gl.store(y2_ptr + offs, scale_by_row_sums(gl.load(x_ptr + offs)))


@triton.jit
def dot_rows(acc, x_ptr, d_ptr, w, start_n, start_m, num_steps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             MASK: tl.constexpr):
    """``acc`` plus, per ``BLOCK_M`` rows of ``x`` from ``start_m``, ``(w @ x^T) @ x`` with ``x``'s
    columns scaled by ``d`` at ``start_n`` (masked causally where ``MASK``): upstream's
    ``_attn_bwd_dkdv`` in small, ``w`` its ``k``, ``d`` its ``Di``."""
    offs_n = start_n + tl.arange(0, BLOCK_N)
    d = tl.load(d_ptr + offs_n)
    curr = start_m
    for _ in range(num_steps):
        offs_m = curr + tl.arange(0, BLOCK_M)
        x = tl.load(x_ptr + offs_m[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
        if MASK:
            x = tl.where(offs_m[:, None] >= offs_n[None, :], x, 0.0)
        x = x * d[None, :]
        acc += tl.dot(tl.dot(w, tl.trans(x)).to(tl.float16), x)
        curr += BLOCK_M
    return acc


@triton.jit
def k_one_start_for_two(x_ptr, d_ptr, w_ptr, y_ptr, num_steps, BLOCK_N: tl.constexpr, MASK_BLOCK: tl.constexpr,
                        BLOCK_M: tl.constexpr):
    """``dot_rows`` called as upstream's attention backward calls ``_attn_bwd_dkdv``: the first
    site passes ``start`` for both ``start_n`` and ``start_m``, the second ``start_m`` made from
    it; both take the ``w`` the kernel loaded once, and load the same ``d``. (``num_steps`` is
    ``BLOCK_N // MASK_BLOCK``, passed: a constant trip count the kernel pipelines for is refused.)"""
    start = tl.program_id(0) * BLOCK_N
    rows = start + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_N)
    w = tl.load(w_ptr + rows[:, None] * BLOCK_N + cols[None, :])
    acc = tl.zeros([BLOCK_N, BLOCK_N], dtype=tl.float32)
    acc = dot_rows(acc, x_ptr, d_ptr, w, start, start, num_steps, MASK_BLOCK, BLOCK_N, MASK=True)
    start_m = start + BLOCK_N
    acc = dot_rows(acc, x_ptr, d_ptr, w, start, start_m, num_steps // 2, BLOCK_M, BLOCK_N, MASK=False)
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], acc)
