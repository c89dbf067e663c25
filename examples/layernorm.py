"""Layer normalization of fp16 rows: the kernel is still Triton (loads, the affine transform,
stores), and the reduction (row mean and reciprocal standard deviation, in fp32) is ported to
Gluon with an explicit layout: whole rows across a warp, 16 bytes per thread.

    python examples/layernorm.py   # builds for every target; on a GPU also checks vs torch
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import compile_pure, row_layout

NUM_WARPS = 4
BM, BN = 4, 1024
EPS = 1e-5
#: Speed of the hybrid kernel relative to each version: at least as fast as both.
GOALS = {"triton": 1.0, "torch": 1.0}


@gluon.jit
def row_moments(x, n_cols, eps, BN: gl.constexpr, L: gl.constexpr):
    """Mean and 1/std of each row of ``x`` (masked columns hold 0), in fp32."""
    x = gl.convert_layout(x, L).to(gl.float32)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    mean = gl.sum(x, axis=1) / n_cols
    centered = gl.where(cols[None, :] < n_cols, x - mean[:, None], 0.0)
    rstd = gl.rsqrt(gl.sum(centered * centered, axis=1) / n_cols + eps)
    return mean, rstd


@triton.jit
def row_moments_triton(x, n_cols, eps, BN: tl.constexpr):
    """The reduction before the port."""
    x = x.to(tl.float32)
    cols = tl.arange(0, BN)
    mean = tl.sum(x, axis=1) / n_cols
    centered = tl.where(cols[None, :] < n_cols, x - mean[:, None], 0.0)
    rstd = tl.rsqrt(tl.sum(centered * centered, axis=1) / n_cols + eps)
    return mean, rstd


@triton.jit
def normalize(x_ptr, w_ptr, b_ptr, y_ptr, x, mean, rstd, n_rows, n_cols, stride, BM: tl.constexpr,
              BN: tl.constexpr):
    """Everything around the reduction: ``(x - mean) * rstd * w + b``, stored as fp16."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    y = (x.to(tl.float32) - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], y.to(tl.float16), mask=mask)


@triton.jit
def load_rows(x_ptr, n_rows, n_cols, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    return tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)


@hybrid.jit
@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                     L: tl.constexpr):
    x = load_rows(x_ptr, n_rows, n_cols, stride, BM, BN)
    mean, rstd = row_moments(x, n_cols, eps, BN, L)
    normalize(x_ptr, w_ptr, b_ptr, y_ptr, x, mean, rstd, n_rows, n_cols, stride, BM, BN)


@triton.jit
def layernorm_triton(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride, eps, BM: tl.constexpr, BN: tl.constexpr):
    """The same kernel before the port: all Triton."""
    x = load_rows(x_ptr, n_rows, n_cols, stride, BM, BN)
    mean, rstd = row_moments_triton(x, n_cols, eps, BN)
    normalize(x_ptr, w_ptr, b_ptr, y_ptr, x, mean, rstd, n_rows, n_cols, stride, BM, BN)


SIGNATURE = {"x_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "n_rows": "i32",
             "n_cols": "i32", "stride": "i32", "eps": "fp32"}
#: Integer arguments the benchmark's launch specializes as multiples of 16 (Triton's JIT does):
#: the static builds are of that specialization.
DIVISIBLE = ("n_cols", "stride")


def constexprs(target: str) -> dict:
    return {"BM": BM, "BN": BN, "L": row_layout(target, NUM_WARPS, BN, vec=8)}   # 8 fp16 = 16 bytes


def build(target: str) -> hybrid.FusedBinary:
    return hybrid.compile(layernorm_kernel, SIGNATURE, constexprs(target), target=target, num_warps=NUM_WARPS,
                          divisible=DIVISIBLE)


def build_triton(target: str):
    return compile_pure(layernorm_triton, SIGNATURE, {"BM": BM, "BN": BN}, target, NUM_WARPS, divisible=DIVISIBLE)


#: (n_rows, n_cols) of the GPU correctness check and of the benchmark; the check's bound (fp16 output).
TOLERANCE = 1e-2
CHECK_SIZE, BENCH_SIZE = (1000, 1000), (65536, 1024)


def problem(n_rows: int, n_cols: int, device: str = "cuda") -> dict:
    """Fresh random fp16 rows, weight and bias on the GPU and a NaN-poisoned output."""
    import torch
    x = torch.randn(n_rows, n_cols, device=device, dtype=torch.float16)
    return {"x": x, "w": torch.rand(n_cols, device=device, dtype=torch.float16) + 0.5,
            "b": torch.randn(n_cols, device=device, dtype=torch.float16), "y": torch.full_like(x, float("nan"))}


def work(n_rows: int, n_cols: int) -> tuple[float, str]:
    return 2 * 2 * n_rows * n_cols, "B"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    import torch
    x, w, b, y = p["x"], p["w"], p["b"], p["y"]
    n_rows, n_cols = x.shape
    if variant == "torch":
        return torch.nn.functional.layer_norm(x, (n_cols, ), w, b, EPS)
    grid = (triton.cdiv(n_rows, BM), )
    args = (x, w, b, y, n_rows, n_cols, x.stride(0), EPS)
    if variant == "hybrid":
        layernorm_kernel[grid](*args, num_warps=NUM_WARPS, **constexprs(target))
    else:
        layernorm_triton[grid](*args, BM=BM, BN=BN, num_warps=NUM_WARPS)
    return y


def error(out, p: dict) -> float:
    """max |out - layer_norm(x)| against a float64 reference."""
    import torch
    x = p["x"].double()
    ref = torch.nn.functional.layer_norm(x, (x.shape[1], ), p["w"].double(), p["b"].double(), EPS)
    return (out.double() - ref).abs().max().item()


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
