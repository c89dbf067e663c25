"""Row softmax, the other way round: the kernel is still Triton, and only the row statistics
(masking, max, sum of exponentials) are ported to Gluon, with an explicit layout, as an
escape hatch inside the Triton kernel.

    python examples/softmax_gluon_stats.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples import softmax
from examples.softmax import (BENCH_SIZE, BM, BN, CHECK_SIZE, NUM_WARPS, SIGNATURE, TOLERANCE, build_triton, error,
                              problem)
from examples.layouts import row_layout

__all__ = ["BENCH_SIZE", "CHECK_SIZE", "GOALS", "TOLERANCE", "build", "build_triton", "constexprs", "error", "problem",
           "run"]

#: Speed of the hybrid kernel relative to each version: at least as fast as both.
GOALS = {"triton": 1.0, "torch": 1.0}


@gluon.jit
def row_stats_gluon(x, n_cols, BN: gl.constexpr, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    x = gl.where(cols[None, :] < n_cols, x, float("-inf"))
    m = gl.max(x, axis=1)
    s = gl.sum(gl.exp(x - m[:, None]), axis=1)
    return m, s


@hybrid.jit
@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, BM: tl.constexpr, BN: tl.constexpr, L: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offsets = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    m, s = row_stats_gluon(x, n_cols, BN, L)
    tl.store(y_ptr + offsets, tl.exp(x - m[:, None]) / s[:, None], mask=mask)


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "L": row_layout(target, NUM_WARPS, BN)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(softmax_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS)


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    if variant != "hybrid":
        return softmax.run(variant, p, target)
    x, y = p["x"], p["y"]
    n_rows, n_cols = x.shape
    softmax_kernel[(triton.cdiv(n_rows, BM), )](x, y, n_rows, n_cols, x.stride(0), num_warps=NUM_WARPS,
                                                **constexprs(target))
    return y


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
