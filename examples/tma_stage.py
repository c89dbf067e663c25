"""A Gluon load stage handing tiles to a Triton compute region: the Gluon host brings a tile of
fp16 rows in as a tensor descriptor load does on each target (a TMA load into shared memory,
completing on an mbarrier, on sm90a/sm100a; a plain load into registers elsewhere, as Triton
lowers a descriptor load there) and hands it to the Triton region that computes the row softmax.
It reads the staged tile back in the 16-byte row layout that Triton's lowering of the region also
computes in (that of a coalesced load of the tile), so the boundary costs nothing; read in another
layout, the boundary's conversion would be folded into the read instead (the tile loaded from
shared memory straight in the region's layout, no round trip through scratch). The all-Triton
version it is measured against loads through a tensor descriptor too.

    python examples/tma_stage.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

import hybrid
from examples.layouts import compile_pure, has_tma, row_layout, use_torch_allocator
from interop.triton.compat import gluon_tma_copies

NUM_WARPS = 4
BM, BN = 64, 128
#: Speed of the hybrid kernel relative to each version.
GOALS = {"triton": 1.0, "torch": 1.0}
tma_load, _ = gluon_tma_copies()


@triton.jit
def row_softmax(x):
    """The compute, still Triton: a numerically safe softmax of each row, in fp32."""
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    return (e / tl.sum(e, axis=1)[:, None]).to(tl.float16)


@gluon.jit
def stage_tile(x_ptr, n_rows, row0, BM: gl.constexpr, BN: gl.constexpr):
    """Rows ``row0 .. row0+BM`` of a row-major ``[n_rows, BN]`` fp16 tensor, in shared memory: a
    TMA load completing on an mbarrier (rows past ``n_rows`` read as zeros)."""
    layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, BN], gl.float16)
    desc = tma.make_tensor_descriptor(x_ptr, [n_rows, BN], [BN, 1], [BM, BN], layout)
    smem = gl.allocate_shared_memory(gl.float16, [BM, BN], layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, BM * BN * 2)
    tma_load(desc, [row0, 0], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    return smem


@hybrid.jit
@gluon.jit
def stage_kernel(x_ptr, y_ptr, n_rows, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr, TMA: gl.constexpr):
    row0 = gl.program_id(0) * BM
    rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    if TMA:
        x = stage_tile(x_ptr, n_rows, row0, BM, BN).load(L)
    else:   # no TMA: a plain load into registers, as Triton lowers a descriptor load here
        x = gl.load(x_ptr + rows[:, None] * BN + cols[None, :], mask=rows[:, None] < n_rows, other=0.0)
    y = gl.convert_layout(row_softmax(x), L)   # the Triton region
    gl.store(y_ptr + rows[:, None] * BN + cols[None, :], y, mask=rows[:, None] < n_rows)


@triton.jit
def stage_triton(x_ptr, y_ptr, n_rows, BM: tl.constexpr, BN: tl.constexpr):
    """The kernel before the port: all Triton, loading through a device-side tensor descriptor
    (TMA through shared memory where the target has it, plain loads elsewhere)."""
    row0 = tl.program_id(0) * BM
    desc = tl.make_tensor_descriptor(x_ptr, [n_rows, BN], [BN, 1], [BM, BN])
    y = row_softmax(desc.load([row0, 0]))
    rows = row0 + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * BN + cols[None, :], y, mask=rows[:, None] < n_rows)


SIGNATURE = {"x_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32"}


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "L": row_layout(target, NUM_WARPS, BN, vec=8), "TMA": has_tma(target)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(stage_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS)


def build_triton(target: str):
    return compile_pure(stage_triton, SIGNATURE, {"BM": BM, "BN": BN}, target, NUM_WARPS)


#: rows of the GPU correctness check and of the benchmark (each row has BN = 128 columns); the
#: check's bound (fp16 output).
TOLERANCE = 2e-3
CHECK_SIZE, BENCH_SIZE = (1000, ), (262144, )


def problem(n_rows: int, device: str = "cuda") -> dict:
    import torch
    x = torch.randn(n_rows, BN, device=device, dtype=torch.float16)
    return {"x": x, "y": torch.full_like(x, float("nan"))}


def work(n_rows: int) -> tuple[float, str]:
    return 2 * 2 * n_rows * BN, "B"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    import torch
    x, y = p["x"], p["y"]
    if variant == "torch":
        return torch.softmax(x.float(), dim=1).half()
    grid = (triton.cdiv(x.shape[0], BM), )
    use_torch_allocator()   # device-side descriptors (Triton's, and Gluon's with TMA) take scratch from it
    if variant == "hybrid":
        stage_kernel[grid](x, y, x.shape[0], num_warps=NUM_WARPS, **constexprs(target))
    else:
        stage_triton[grid](x, y, x.shape[0], BM=BM, BN=BN, num_warps=NUM_WARPS)
    return y


def error(out, p: dict) -> float:
    """max |out - softmax(x)| against a float64 reference."""
    import torch
    return (out.double() - torch.softmax(p["x"].double(), dim=1)).abs().max().item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
