"""fp16 matmul, half ported: the Gluon host owns the epilogue (fp16 cast, bounds, an explicit
store layout, or on AMD the MFMA layout Triton's AMD backend stores from); the K loop with ``tl.dot`` is the original Triton code, called as a Triton
region and lowered by Triton's own passes (tensor cores, pipelining).

    python examples/tile_matmul.py      # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import compile_pure, store_tile, store_tile_as_is, stores_from_dot_layout, tile_layout

NUM_WARPS = 4
BM, BN, BK = 64, 64, 32


@triton.jit
def tile_matmul(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@hybrid.jit
@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, L: gl.constexpr, FROM_ACC: gl.constexpr):
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    acc = tile_matmul(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK)
    if FROM_ACC:   # AMD: from the MFMA layout, as Triton stores there
        store_tile_as_is(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN)
    else:   # cast first (half the bytes to shuffle), then rows of L
        store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN, L)


@triton.jit
def matmul_triton(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same kernel before the port: all Triton (for benchmarks)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tile_matmul(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16), mask=mask)


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "BK": BK, "L": tile_layout(target, NUM_WARPS), "FROM_ACC": stores_from_dot_layout(target)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(matmul_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS)


def build_triton(target: str):
    return compile_pure(matmul_triton, SIGNATURE, {"BM": BM, "BN": BN, "BK": BK}, target, NUM_WARPS)


#: (M, N, K) of the GPU correctness check and of the benchmark; the check's error bound (fp16 in, fp32 accumulate).
TOLERANCE = 1e-2
CHECK_SIZE, BENCH_SIZE = (300, 200, 250), (4096, 4096, 4096)


def problem(M: int, N: int, K: int, device: str = "cuda", dtype: str = "float16") -> dict:
    """Fresh random inputs (fp16 unless told) on the GPU and a NaN-poisoned output."""
    import torch
    dtype = getattr(torch, dtype)
    return {"a": torch.randn(M, K, device=device, dtype=dtype),
            "b": torch.randn(K, N, device=device, dtype=dtype),
            "c": torch.full((M, N), float("nan"), device=device, dtype=dtype)}


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    a, b, c = p["a"], p["b"], p["c"]
    if variant == "torch":
        return a @ b
    (M, K), N = a.shape, b.shape[1]
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    args = (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    if variant == "hybrid":
        matmul_kernel[grid](*args, num_warps=NUM_WARPS, **constexprs(target))
    else:
        matmul_triton[grid](*args, BM=BM, BN=BN, BK=BK, num_warps=NUM_WARPS)
    return c


def error(out, p: dict) -> float:
    """max |out - a @ b| relative to max |a @ b|, against a float64 reference."""
    ref = p["a"].double() @ p["b"].double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
