"""fp16 matmul, the other way round: the kernel is still Triton (K loop with ``tl.dot``), and
only the epilogue is ported to Gluon: an explicit store layout, the fp16 cast and bounds; on
sm90a and sm100a a TMA store through shared memory instead, on AMD a store from the MFMA layout
(as Triton's AMD backend stores).

    python examples/matmul_gluon_epilogue.py  # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl

import hybrid
from examples import tile_matmul
from examples.layouts import (has_tma, store_tile, store_tile_as_is, store_tile_tma, stores_from_dot_layout, tile_layout,
                              use_torch_allocator)
from examples.tile_matmul import (BENCH_SIZE, BK, BM, BN, CHECK_SIZE, NUM_WARPS, SIGNATURE, TOLERANCE, build_triton,
                                  error, problem)

__all__ = ["BENCH_SIZE", "CHECK_SIZE", "TOLERANCE", "build", "build_triton", "constexprs", "error", "problem", "run"]


@hybrid.jit
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, L: tl.constexpr, TMA: tl.constexpr,
                  FROM_ACC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tile_matmul.tile_matmul(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK)
    if TMA:
        store_tile_tma(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN)
    elif FROM_ACC:   # AMD: from the MFMA layout, as Triton stores there
        store_tile_as_is(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN)
    else:
        store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN, L)


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "BK": BK, "L": tile_layout(target, NUM_WARPS), "TMA": has_tma(target),
            "FROM_ACC": stores_from_dot_layout(target)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(matmul_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS)


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    if variant != "hybrid":
        return tile_matmul.run(variant, p, target)
    if has_tma(target):
        use_torch_allocator()
    a, b, c = p["a"], p["b"], p["c"]
    (M, K), N = a.shape, b.shape[1]
    matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                                                            num_warps=NUM_WARPS, **constexprs(target))
    return c


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
