"""bf16 matmul the other way round: a Gluon kernel whose mainloop is ported to Hopper's
``warpgroup_mma`` (cp.async copies into a ring of NVMMA-swizzled shared-memory stages, one
asynchronous wgmma in flight), while the epilogue is still the tutorial's Triton code, called as
a Triton region. sm90a only: other targets are skipped (``SKIP`` says why). The pure-Gluon
version stores with ``the Gluon epilogue ``examples.layouts.store_tile``; pure Triton is the tutorial kernel.

    python examples/matmul_wgmma.py   # builds for sm90a; on an H100/H200 also checks vs torch
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

import hybrid
from examples import matmul
from examples.layouts import compile_pure, row_layout, store_tile
from examples.matmul import (BENCH_SIZE, DIVISIBLE, GOALS, SIGNATURE, TOLERANCE, error, problem, store_tile_triton,
                             tile_ids, work)
from interop.triton.compat import gluon_async_copy, gluon_barrier

__all__ = ["BENCH_SIZE", "CHECK_SIZE", "GOALS", "SKIP", "TOLERANCE", "VARIANTS", "build", "build_gluon",
           "build_triton", "constexprs", "error", "problem", "run", "work"]

async_load = gluon_async_copy()
barrier = gluon_barrier()

VARIANTS = ("hybrid", "gluon", "triton", "torch")
NUM_WARPS, STAGES = 8, 4
BM, BN, BK, GROUP_M = 128, 256, 64, 8
SKIP = {target: "warpgroup_mma (wgmma) is Hopper-only: built for sm90a alone"
        for target in ("sm80", "sm100a", "gfx942", "gfx950")}
#: The check's (M, N, K): ragged tiles in every dimension, as ``matmul``'s, but with N and K (the
#: strides) multiples of 16: cp.async copies need the row starts 4-byte aligned as far as the
#: compiler knows, which a launch with other strides does not tell it (the build says so).
CHECK_SIZE = (1000, 528, 304)


@gluon.jit
def wgmma_mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM: gl.constexpr, BN: gl.constexpr,
                   BK: gl.constexpr, STAGES: gl.constexpr, LA: gl.constexpr, LB: gl.constexpr,
                   ACC: gl.constexpr):
    """acc = A[pid_m tile, :] @ B[:, pid_n tile] in the wgmma accumulator layout ``ACC``.

    Tile k lives in stage k % STAGES. Tiles k+1 .. k+STAGES-2 are in flight while wgmma k runs;
    the load of tile k+STAGES-2 overwrites the stage wgmma k-2 read, which every warpgroup has
    retired (``warpgroup_mma_wait(1)`` in iteration k-1) before the barrier of iteration k.
    """
    AHEAD: gl.constexpr = STAGES - 2
    smem: gl.constexpr = gl.NVMMASharedLayout(128, 16)
    a_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BM, BK], smem)
    b_smem = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BK, BN], smem)
    rm = (pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, LA))) % M
    rka = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))
    rkb = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    rn = (pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LB))) % N
    a_ptrs = a_ptr + rm[:, None] * stride_am + rka[None, :]
    b_ptrs = b_ptr + rkb[:, None] * stride_bk + rn[None, :]
    for i in gl.static_range(AHEAD):
        async_load(a_smem.index(i), a_ptrs + i * BK, mask=rka[None, :] < K - i * BK)
        async_load(b_smem.index(i), b_ptrs + i * BK * stride_bk, mask=rkb[:, None] < K - i * BK)
        async_copy.commit_group()
    acc = gl.zeros([BM, BN], gl.float32, layout=ACC)
    for k in range(gl.cdiv(K, BK)):
        async_copy.wait_group(AHEAD - 1)   # tile k has landed (this thread's copies) ...
        barrier()                          # ... and every thread's; wgmma k-2 retired everywhere
        fence_async_shared()
        stage = k % STAGES
        acc = warpgroup_mma(a_smem.index(stage), b_smem.index(stage), acc, is_async=True)
        t = k + AHEAD
        async_load(a_smem.index(t % STAGES), a_ptrs + t * BK, mask=rka[None, :] < K - t * BK)
        async_load(b_smem.index(t % STAGES), b_ptrs + t * BK * stride_bk, mask=rkb[:, None] < K - t * BK)
        async_copy.commit_group()
        acc = warpgroup_mma_wait(1, deps=[acc])
    async_copy.wait_group(0)
    return warpgroup_mma_wait(0, deps=[acc])


@hybrid.jit
@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: gl.constexpr, BN: gl.constexpr,
                  BK: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr, LA: gl.constexpr,
                  LB: gl.constexpr, ACC: gl.constexpr):
    pid_m, pid_n = tile_ids(M, N, BM, BN, GROUP_M)   # scalar Triton code: a region too
    acc = wgmma_mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK, STAGES, LA, LB, ACC)
    # The unported epilogue; cast first, so that half the bytes cross into its store layout.
    store_tile_triton(c_ptr, acc.to(gl.bfloat16), M, N, stride_cm, pid_m, pid_n, BM, BN)


@gluon.jit
def matmul_gluon(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: gl.constexpr, BN: gl.constexpr,
                 BK: gl.constexpr, GROUP_M: gl.constexpr, STAGES: gl.constexpr, LA: gl.constexpr, LB: gl.constexpr,
                 ACC: gl.constexpr, L: gl.constexpr):
    """All Gluon: the same mainloop and ``the Gluon epilogue ``examples.layouts.store_tile`` (``tile_ids`` is plain
    scalar code, which upstream Gluon inlines as it is)."""
    pid_m, pid_n = tile_ids(M, N, BM, BN, GROUP_M)
    acc = wgmma_mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK, STAGES, LA, LB, ACC)
    store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN, L)


def constexprs(target: str) -> dict:
    if target in SKIP:
        raise ValueError(f"matmul_wgmma on {target}: {SKIP[target]}")
    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, BN, 16])
    return {"BM": BM, "BN": BN, "BK": BK, "GROUP_M": GROUP_M, "STAGES": STAGES, "ACC": acc,
            "LA": row_layout(target, NUM_WARPS, BK, vec=8), "LB": row_layout(target, NUM_WARPS, BN, vec=8)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(matmul_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS,
                          divisible=DIVISIBLE)


def gluon_constexprs(target: str) -> dict:
    return {**constexprs(target), "L": row_layout(target, NUM_WARPS, BN, vec=8)}


def build_gluon(target: str):
    return compile_pure(matmul_gluon, SIGNATURE, gluon_constexprs(target), target, NUM_WARPS, divisible=DIVISIBLE)


build_triton = matmul.build_triton


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``gluon``, ``triton`` or ``torch``); returns the output."""
    if variant in ("triton", "torch"):
        return matmul.run(variant, p, target)
    if variant == "hybrid":
        return matmul.launch(matmul_kernel, p, num_warps=NUM_WARPS, **constexprs(target))
    return matmul.launch(matmul_gluon, p, num_warps=NUM_WARPS, **gluon_constexprs(target))


if __name__ == "__main__":   # (Hopper only, so not one of ``make demo``'s every-target examples)
    print(build("sm90a").report())
