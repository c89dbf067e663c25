"""Triton helpers whose IR holds low-precision constants MLIR prints as bits (bf16 ``-inf`` is
``0xFF80``), for ports from Triton's IR (tests/test_port_constants.py)."""
import triton
import triton.language as tl

SIGNATURE = {"x_ptr": "*bf16", "h_ptr": "*fp16", "y_ptr": "*fp32", "n": "i32"}
FP8_SIGNATURE = {"h_ptr": "*fp16", "y_ptr": "*fp32"}
CONSTEXPRS = {"BLOCK": 128}


@triton.jit
def masked_max_bf16(x_ptr, offs, n):
    """Upstream's masked row max on bf16: ``other=-inf`` is the bf16 constant 0xFF80."""
    x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
    return tl.max(x, axis=0).to(tl.float32)


@triton.jit
def fp16_extremes(h_ptr, offs, n):
    """fp16 constants of every kind: -inf, the largest finite value, the smallest denormal, NaN."""
    h = tl.load(h_ptr + offs, mask=offs < n, other=float("-inf"))
    top = tl.minimum(h, 65504.0)
    tiny = tl.where(h == 0.0, 5.960464477539063e-08, top)
    return tl.where(h != h, float("nan"), tiny).to(tl.float32)


@triton.jit
def fp8_round_trip(h, offs):
    """fp8 constants, scalars and tiles: e4m3's largest value, e5m2's smallest denormal, negated."""
    big = tl.full(offs.shape, 448.0, tl.float8e4nv).to(tl.float32)
    low = tl.full(offs.shape, -1.52587890625e-05, tl.float8e5).to(tl.float32)
    tiles = tl.where(offs < 64, tl.full(offs.shape, 448.0, tl.float8e4nv), tl.full(offs.shape, 0.5, tl.float8e4nv))
    return tl.where(h > 0, big, low) + tiles.to(tl.float32)


@triton.jit
def k_constants(x_ptr, h_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr, masked_max_bf16(x_ptr, offs, n))
    tl.store(y_ptr + 1 + offs, fp16_extremes(h_ptr, offs, n))


@triton.jit
def k_fp8(h_ptr, y_ptr, BLOCK: tl.constexpr):
    """(Triton 3.6's frontend cannot build an fp8 ``tl.full``: a kernel of its own.)"""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, fp8_round_trip(tl.load(h_ptr + offs).to(tl.float32), offs))
