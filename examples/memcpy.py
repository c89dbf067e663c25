"""1D copy, the Gluon tutorials' memcpy lesson: the kernel is still Triton (offsets, masked load),
and the store is ported to Gluon with an explicit vectorized layout (16 bytes per thread and
access). Also a pure-Gluon version (load and store in that layout) and the pure-Triton original.

    python examples/memcpy.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import compile_pure, vector_layout

NUM_WARPS = 4
BLOCK = 4096
VARIANTS = ("hybrid", "gluon", "triton", "torch")
#: Benchmark goals (speed of the hybrid kernel relative to each version): 90% of torch's
#: device-to-device copy (``cudaMemcpyAsync``) bandwidth, measured in the same run.
GOALS = {"torch": 0.9}


@gluon.jit
def store_block(y_ptr, x, start, n, BLOCK: gl.constexpr, L: gl.constexpr):
    x = gl.convert_layout(x, L)
    offs = start + gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, x, mask=offs < n)


@hybrid.jit
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, L: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    store_block(y_ptr, x, start, n, BLOCK, L)


@gluon.jit
def copy_gluon(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    """The whole copy in Gluon: one layout for load and store."""
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def copy_triton(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The kernel before the port: all Triton."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
#: Integer arguments the benchmark launch specializes as multiples of 16 (the static builds are of that).
DIVISIBLE = ("n", )


def constexprs(target: str) -> dict:
    return {"BLOCK": BLOCK, "L": vector_layout(target, NUM_WARPS)}


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(copy_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS,
                          divisible=DIVISIBLE)


def build_gluon(target: str):
    return compile_pure(copy_gluon, SIGNATURE, constexprs(target), target, NUM_WARPS, divisible=DIVISIBLE)


def build_triton(target: str):
    return compile_pure(copy_triton, SIGNATURE, {"BLOCK": BLOCK}, target, NUM_WARPS, divisible=DIVISIBLE)


#: (elements,) of the GPU correctness check and of the benchmark (1 GiB each way in fp32).
TOLERANCE = 0.0
CHECK_SIZE, BENCH_SIZE = (100_003, ), (1 << 28, )


def problem(n: int, device: str = "cuda") -> dict:
    """Fresh random inputs on the GPU and a NaN-poisoned output."""
    import torch
    x = torch.randn(n, device=device)
    return {"x": x, "y": torch.full_like(x, float("nan"))}


def work(n: int) -> tuple[float, str]:
    """Bytes moved: read and write every element once."""
    return 2 * 4 * n, "B"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``gluon``, ``triton`` or ``torch``); returns the output."""
    x, y = p["x"], p["y"]
    if variant == "torch":
        return y.copy_(x)   # a device-to-device cudaMemcpyAsync: the bandwidth to match
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK), )
    if variant == "hybrid":
        copy_kernel[grid](x, y, n, num_warps=NUM_WARPS, **constexprs(target))
    elif variant == "gluon":
        copy_gluon[grid](x, y, n, num_warps=NUM_WARPS, **constexprs(target))
    else:
        copy_triton[grid](x, y, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return y


def error(out, p: dict) -> float:
    """max |out - x| (a copy is exact; NaN where an element was not written)."""
    return (out - p["x"]).abs().max().item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
