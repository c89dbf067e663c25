"""bf16 matmul, 8192^3 in the benchmark: the kernel is Triton's tutorial matmul (grouped tile
order, K loop with ``tl.dot``, lowered by Triton's own passes: tensor cores, pipelining), and only
the epilogue is ported to Gluon (bf16 cast, explicit 16-byte store layout, bounds).
``examples/matmul_wgmma.py`` is the other half: a Gluon ``warpgroup_mma`` mainloop with this
module's Triton epilogue. Operands are row-major (unit inner strides).

    python examples/matmul.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl

import hybrid
from examples import tile_matmul
from examples.layouts import compile_pure, row_layout, store_tile, store_tile_as_is, stores_from_dot_layout
from interop.targets import TARGETS

#: Tiles and launch options per backend: the tutorial's for bf16 on Hopper/Ampere, a smaller
#: K step and two stages on AMD (64 KiB of LDS on gfx942).
TILES = {"cuda": {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
         "hip": {"BM": 128, "BN": 256, "BK": 32, "GROUP_M": 8, "num_warps": 8, "num_stages": 2}}
#: Speed of the hybrid kernel relative to each version.
GOALS = {"torch": 0.9, "triton": 1.0}


def config(target: str) -> dict:
    return TILES[TARGETS[target].backend]


@triton.jit
def tile_ids(M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """The tutorial's grouped ordering: GROUP_M tile rows share B tiles in L2."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (pid % group) % group_m, (pid % group) // group_m


@triton.jit
def mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr):
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    return acc


@triton.jit
def store_tile_triton(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr):
    """The tutorial's epilogue (Triton picks the store layout)."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.bfloat16), mask=mask)


@hybrid.jit
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, GROUP_M: tl.constexpr, L: tl.constexpr, FROM_ACC: tl.constexpr):
    pid_m, pid_n = tile_ids(M, N, BM, BN, GROUP_M)
    acc = mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK)
    if FROM_ACC:   # AMD: the ported epilogue stores from the MFMA layout, as Triton does there
        store_tile_as_is(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN)
    else:
        store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN, L)   # the ported epilogue (bf16 cast, 16-byte rows)


@triton.jit
def matmul_triton(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, GROUP_M: tl.constexpr):
    """Triton's tutorial matmul (row-major operands): the kernel before the port."""
    pid_m, pid_n = tile_ids(M, N, BM, BN, GROUP_M)
    acc = mainloop(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, BM, BN, BK)
    store_tile_triton(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM, BN)


SIGNATURE = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
#: Integer arguments the benchmark launch specializes as multiples of 16 (the static builds are of that).
DIVISIBLE = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")


def tiles(target: str) -> dict:
    """The tile constexprs of the pure-Triton kernel."""
    return {k: v for k, v in config(target).items() if not k.startswith("num_")}


def options(target: str) -> dict:
    return {k: v for k, v in config(target).items() if k.startswith("num_")}


def constexprs(target: str) -> dict:
    c = config(target)
    return {**tiles(target), "L": row_layout(target, c["num_warps"], c["BN"], vec=8),   # 8 bf16 = 16 bytes
            "FROM_ACC": stores_from_dot_layout(target)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(matmul_kernel, SIGNATURE, constexprs(target), target=target, divisible=DIVISIBLE,
                          **options(target))


def build_triton(target: str):
    return compile_pure(matmul_triton, SIGNATURE, tiles(target), target, divisible=DIVISIBLE, **options(target))


#: (M, N, K) of the GPU correctness check and of the benchmark; the check's bound (bf16 output,
#: relative to the largest product).
TOLERANCE = 2e-2
CHECK_SIZE, BENCH_SIZE = (1000, 520, 300), (8192, 8192, 8192)


def problem(M: int, N: int, K: int, device: str = "cuda") -> dict:
    """Fresh random bf16 inputs on the GPU and a NaN-poisoned output."""
    return tile_matmul.problem(M, N, K, device, dtype="bfloat16")


def work(M: int, N: int, K: int) -> tuple[float, str]:
    return 2 * M * N * K, "FLOP"


def launch(kernel, p: dict, **constexprs):
    """``kernel`` (any of the matmul kernels: same arguments, ``BM``/``BN`` tiles) over the grouped 1D grid."""
    a, b, c = p["a"], p["b"], p["c"]
    (M, K), N = a.shape, b.shape[1]
    grid = (triton.cdiv(M, constexprs["BM"]) * triton.cdiv(N, constexprs["BN"]), )
    kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), **constexprs)
    return c


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    if variant == "torch":
        return p["a"] @ p["b"]
    if variant == "hybrid":
        return launch(matmul_kernel, p, **constexprs(target), **options(target))
    return launch(matmul_triton, p, **tiles(target), **options(target))


def error(out, p: dict) -> float:
    """max |out - a @ b| relative to max |a @ b|, against a float64 reference."""
    ref = p["a"].double() @ p["b"].double()
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
