"""Copy of a non-contiguous view (a transposed matrix) into a contiguous one, the Gluon tutorials'
"transposed layout" lesson: the loads are coalesced along the view's unit-stride dimension 0, the
stores along dimension 1. The kernel is still Triton (tile offsets, masked load); the store is
ported to Gluon, which converts the tile once (through shared memory) to a row-major layout so
that both sides stay coalesced. Also a pure-Gluon version and the pure-Triton original.

    python examples/strided_copy.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import column_layout, compile_pure, row_layout, store_tile

NUM_WARPS = 4
BM, BN = 64, 64
VARIANTS = ("hybrid", "gluon", "triton", "torch")
#: Speed of the hybrid kernel relative to ``tensor.contiguous()``.
GOALS = {"torch": 2.0}


@hybrid.jit
@triton.jit
def transpose_copy_kernel(x_ptr, y_ptr, M, N, stride_xn, stride_ym, BM: tl.constexpr, BN: tl.constexpr,
                          L: tl.constexpr):
    """``y[m, n] = x[m, n]`` for a view ``x`` with strides ``(1, stride_xn)`` (e.g. ``a.t()``)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] + rn[None, :] * stride_xn, mask=mask)
    store_tile(y_ptr, x, M, N, stride_ym, pid_m, pid_n, BM, BN, L)   # column-major -> row-major, once


@gluon.jit
def transpose_copy_gluon(x_ptr, y_ptr, M, N, stride_xn, stride_ym, BM: gl.constexpr, BN: gl.constexpr,
                         LT: gl.constexpr, L: gl.constexpr):
    """All Gluon: load in the column-major layout ``LT``, store through ``store_tile``."""
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, LT))
    rn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LT))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = gl.load(x_ptr + rm[:, None] + rn[None, :] * stride_xn, mask=mask)
    store_tile(y_ptr, x, M, N, stride_ym, pid_m, pid_n, BM, BN, L)   # column-major -> row-major, once


@triton.jit
def transpose_copy_triton(x_ptr, y_ptr, M, N, stride_xn, stride_ym, BM: tl.constexpr, BN: tl.constexpr):
    """The kernel before the port: all Triton (its coalescing pass picks the store layout)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] + rn[None, :] * stride_xn, mask=mask)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], x, mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xn": "i32", "stride_ym": "i32"}
#: Integer arguments the benchmark launch specializes as multiples of 16 (the static builds are of that).
DIVISIBLE = ("M", "N", "stride_xn", "stride_ym")


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "L": row_layout(target, NUM_WARPS, BN)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(transpose_copy_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS,
                          divisible=DIVISIBLE)


def build_gluon(target: str):
    consts = {**constexprs(target), "LT": column_layout(target, NUM_WARPS, BM)}
    return compile_pure(transpose_copy_gluon, SIGNATURE, consts, target, NUM_WARPS, divisible=DIVISIBLE)


def build_triton(target: str):
    return compile_pure(transpose_copy_triton, SIGNATURE, {"BM": BM, "BN": BN}, target, NUM_WARPS, divisible=DIVISIBLE)


#: (M, N) of the transposed view, for the GPU correctness check and the benchmark (fp32).
TOLERANCE = 0.0
CHECK_SIZE, BENCH_SIZE = (300, 200), (8192, 8192)


def problem(M: int, N: int, device: str = "cuda") -> dict:
    """A fresh random (M, N) view with strides (1, M) on the GPU and a NaN-poisoned contiguous output."""
    import torch
    x = torch.randn(N, M, device=device).t()
    return {"x": x, "y": torch.full((M, N), float("nan"), device=device)}


def work(M: int, N: int) -> tuple[float, str]:
    return 2 * 4 * M * N, "B"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``gluon``, ``triton`` or ``torch``); returns the output."""
    x, y = p["x"], p["y"]
    if variant == "torch":
        return x.contiguous()
    assert x.stride(0) == 1, "the kernels are written for a transposed view (unit stride along dimension 0)"
    M, N = x.shape
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    args = (x, y, M, N, x.stride(1), y.stride(0))
    if variant == "hybrid":
        transpose_copy_kernel[grid](*args, num_warps=NUM_WARPS, **constexprs(target))
    elif variant == "gluon":
        transpose_copy_gluon[grid](*args, num_warps=NUM_WARPS, LT=column_layout(target, NUM_WARPS, BM),
                                   **constexprs(target))
    else:
        transpose_copy_triton[grid](*args, BM=BM, BN=BN, num_warps=NUM_WARPS)
    return y


def error(out, p: dict) -> float:
    """max |out - x| (a copy is exact; NaN where an element was not written)."""
    return (out - p["x"]).abs().max().item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
