"""A shared-memory handoff: a Triton producer (row-scaled fp16 A, a B tile) feeds a Gluon tensor-core
consumer that declares its operands in NVMMA-swizzled shared memory
(``@hybrid.takes(a=hybrid.shared("SA"), b=hybrid.shared("SB"))``): the host stores each operand
once, fences it for the async proxy and hands over the descriptors. The consumer is
``warpgroup_mma`` on sm90a and ``tcgen05_mma`` into tensor memory on sm100a; on sm80 and AMD the
same kernel keeps the product in Triton (``tl.dot`` on the registers it already holds).
``C = (scale[:, None] * A) @ B`` with ``K = 64`` (one MMA step per tile: a projection).

    python examples/mma_handoff.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, warpgroup_mma,
                                                               warpgroup_mma_wait)

import hybrid
from examples.layouts import compile_pure
from interop.targets import TARGETS

NUM_WARPS = 4
BM, BN, K = 128, 64, 64
#: Speed of the hybrid kernel relative to each version.
GOALS = {"triton": 1.0}
VARIANTS = ("hybrid", "triton", "torch")


@hybrid.takes(a=hybrid.shared("SA"), b=hybrid.shared("SB"))
@gluon.jit
def wgmma_tile(a, b, SA: gl.constexpr, SB: gl.constexpr, ACC: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    """One asynchronous warpgroup MMA straight from the shared operands (sm90a)."""
    acc = warpgroup_mma(a, b, gl.zeros([BM, BN], gl.float32, ACC), is_async=True)
    return warpgroup_mma_wait(num_outstanding=0, deps=[acc])


@gluon.jit
def tcgen05_product(a, b, ACC: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    """``a @ b`` by one Blackwell MMA into tensor memory (``a`` in shared or tensor memory, ``b``
    in shared memory), completion waited for on an mbarrier, the product loaded in ``ACC``."""
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    fence_async_shared()
    acc = blackwell.allocate_tensor_memory(gl.float32, [BM, BN], blackwell.TensorMemoryLayout(block=(BM, BN),
                                                                                                col_stride=1))
    blackwell.tcgen05_mma(a, b, acc, use_acc=False)
    blackwell.tcgen05_commit(bar)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    return acc.load(ACC)


@hybrid.takes(a=hybrid.shared("SA"), b=hybrid.shared("SB"))
@gluon.jit
def tcgen05_tile(a, b, SA: gl.constexpr, SB: gl.constexpr, ACC: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    """One Blackwell MMA into tensor memory, completion signalled on an mbarrier (sm100a)."""
    return tcgen05_product(a, b, ACC, BM, BN)


@triton.jit
def scaled_rows(a_ptr, s_ptr, M, pid_m, BM: tl.constexpr, K: tl.constexpr):
    """The producer: an fp16 A tile with each row scaled (a dequantization step)."""
    rm = pid_m * BM + tl.arange(0, BM)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
    s = tl.load(s_ptr + rm, mask=rm < M, other=0.0)
    return (a.to(tl.float32) * s[:, None]).to(tl.float16)


@triton.jit
def b_tile(b_ptr, N, pid_n, BN: tl.constexpr, K: tl.constexpr):
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, K)
    return tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)


@triton.jit
def store_c(c_ptr, c, M, N, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr):
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@hybrid.jit
@triton.jit
def mma_kernel(a_ptr, s_ptr, b_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr,
               MMA: tl.constexpr, SA: tl.constexpr, SB: tl.constexpr, ACC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = scaled_rows(a_ptr, s_ptr, M, pid_m, BM, K)
    b = b_tile(b_ptr, N, pid_n, BN, K)
    if MMA == "wgmma":
        c = wgmma_tile(a, b, SA, SB, ACC, BM, BN)
    elif MMA == "tcgen05":
        c = tcgen05_tile(a, b, SA, SB, ACC, BM, BN)
    else:   # sm80, AMD: a register handoff to Triton's own dot
        c = tl.dot(a, b)
    store_c(c_ptr, c, M, N, pid_m, pid_n, BM, BN)


@triton.jit
def mma_triton(a_ptr, s_ptr, b_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr):
    """The kernel before the port: all Triton."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = scaled_rows(a_ptr, s_ptr, M, pid_m, BM, K)
    c = tl.dot(a, b_tile(b_ptr, N, pid_n, BN, K))
    store_c(c_ptr, c, M, N, pid_m, pid_n, BM, BN)


SIGNATURE = {"a_ptr": "*fp16", "s_ptr": "*fp32", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32"}
DIVISIBLE = ("N", )


def mma(target: str) -> str:
    spec = TARGETS[target]
    if spec.backend != "cuda" or int(spec.arch) < 90:
        return "dot"
    return "wgmma" if int(spec.arch) < 100 else "tcgen05"


#: Targets where the kernel has no Gluon region (no wgmma or tcgen05): the product stays in Triton.
REGIONLESS = tuple(t for t in TARGETS if mma(t) == "dot")


def constexprs(target: str) -> dict:
    kind = mma(target)
    if kind == "dot":
        return {"BM": BM, "BN": BN, "K": K, "MMA": kind, "SA": None, "SB": None, "ACC": None}
    acc = (gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, BN, 16])
           if kind == "wgmma" else gl.BlockedLayout([1, BN], [32, 1], [NUM_WARPS, 1], [0, 1]))   # tcgen05.ld 32x32b
    return {"BM": BM, "BN": BN, "K": K, "MMA": kind, "SA": gl.NVMMASharedLayout.get_default_for([BM, K], gl.float16),
            "SB": gl.NVMMASharedLayout.get_default_for([K, BN], gl.float16), "ACC": acc}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(mma_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS,
                          divisible=DIVISIBLE)


def build_triton(target: str):
    return compile_pure(mma_triton, SIGNATURE, {"BM": BM, "BN": BN, "K": K}, target, NUM_WARPS, divisible=DIVISIBLE)


#: (M, N) of the GPU correctness check and of the benchmark; the check's bound (fp16 operands,
#: fp32 accumulation, relative to the largest product).
TOLERANCE = 1e-2
CHECK_SIZE, BENCH_SIZE = (300, 200), (16384, 8192)


def problem(M: int, N: int, device: str = "cuda") -> dict:
    """Fresh random fp16 operands and row scales, and a NaN-poisoned fp32 output."""
    import torch
    return {"a": torch.randn(M, K, device=device, dtype=torch.float16),
            "s": torch.rand(M, device=device) + 0.5,
            "b": torch.randn(K, N, device=device, dtype=torch.float16),
            "c": torch.full((M, N), float("nan"), device=device)}


def work(M: int, N: int) -> tuple[float, str]:
    return 2 * M * N * K, "FLOP"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    a, s, b, c = p["a"], p["s"], p["b"], p["c"]
    M, N = a.shape[0], b.shape[1]
    if variant == "torch":
        return (a.float() * s[:, None]).half().float() @ b.float()
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    if variant == "hybrid":
        mma_kernel[grid](a, s, b, c, M, N, num_warps=NUM_WARPS, **constexprs(target))
    else:
        mma_triton[grid](a, s, b, c, M, N, BM=BM, BN=BN, K=K, num_warps=NUM_WARPS)
    return c


def error(out, p: dict) -> float:
    """max |out - (scale * a) @ b| relative to its largest element, against a float64 reference."""
    ref = (p["a"].double() * p["s"].double()[:, None]) @ p["b"].double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
