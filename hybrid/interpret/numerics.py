"""Floating-point types numpy has no arithmetic for, computed as the GPU computes them.

Triton's interpreter stores bf16 and the fp8 formats as their raw bits (``uint16``/``uint8``) and
hands those bits to numpy's arithmetic, so ``x + 1`` in bf16 adds integers (8.5e37, inf, nan),
and it narrows fp32 to bf16 by truncating. The GPU computes each op in fp32 (or natively, which
rounds the same: fp32 holds the exact result of a bf16 op to within one rounding) and rounds to
nearest even; its fp8 conversions round to nearest even and saturate to the largest finite
value (PTX ``cvt.rn.satfinite``), NaN staying NaN. Here values are decoded to fp32, computed,
and encoded back through torch's conversions, which round to nearest even.
"""
from __future__ import annotations

import numpy as np
import torch
import triton.language as tl

#: torch's type for each Triton type the interpreter stores as bits (fp8e4b15 has none: upstream's rules)
TORCH_TYPES = {tl.bfloat16: torch.bfloat16, tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2,
               tl.float8e4b8: torch.float8_e4m3fnuz, tl.float8e5b16: torch.float8_e5m2fnuz}
#: per bit width: the integer types torch and numpy hold the bits in
_BITS = {16: (torch.int16, np.int16, np.uint16), 8: (torch.uint8, np.uint8, np.uint8)}


def stored_as_bits(dtype) -> bool:
    return dtype in TORCH_TYPES


def decode(bits: np.ndarray, dtype) -> np.ndarray:
    """The fp32 values of ``dtype`` numbers held as raw bits."""
    _, signed, _ = _BITS[dtype.primitive_bitwidth]
    return torch.from_numpy(np.ascontiguousarray(bits).view(signed)).view(TORCH_TYPES[dtype]).float().numpy()


def encode(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` (a float or int array) rounded to nearest even into ``dtype``'s bits; fp8
    saturates to its largest finite value, as the GPU's conversion does."""
    as_int, _, unsigned = _BITS[dtype.primitive_bitwidth]
    values = np.asarray(values)
    wide = torch.from_numpy(np.ascontiguousarray(values if values.dtype.kind == "f" else values.astype(np.float64)))
    torch_type = TORCH_TYPES[dtype]
    if dtype.primitive_bitwidth == 8:
        largest = torch.finfo(torch_type).max
        wide = torch.where(wide.isnan(), wide, wide.clamp(-largest, largest))
    return wide.to(torch_type).view(as_int).numpy().view(unsigned)


def quiet() -> np.errstate:
    """numpy's floating-point warnings off while a kernel is interpreted: the GPU raises no
    floating-point exceptions, and whole tiles are computed, so lanes a mask turns off (loaded as
    ``other=-inf``, say) make infs and nans nobody reads. numpy's settings outside stay as they are."""
    return np.errstate(all="ignore")
