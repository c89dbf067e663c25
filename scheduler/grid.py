"""Launch grids: what a GPU driver accepts, checked before anything runs.

The bundle loader (``hybrid.loader``) and the interpreter (``hybrid.interpret``) both check a
grid here, so a grid no GPU would launch fails the same way with or without one, in one line
naming the dimension and the limit, where the driver would return an error code (or the
interpreter start four billion programs). Limits per backend:

- CUDA: x <= 2**31-1, y and z <= 65535 programs (the CUDA C++ Programming Guide, "Technical
  Specifications per Compute Capability": maximum x-dimension of a grid of thread blocks 2**31-1,
  y- or z-dimension 65535; the same on every compute capability Triton targets).
- HIP: per dimension, programs x threads per program < 2**32 (HIP's runtime API reference: "HIP
  does not support kernel launch with total work items defined in dimension with size gridDim x
  blockDim >= 2^32"); a Triton program is ``warp_size * num_warps`` threads along x, one along y, z.

A dimension of 0 is allowed and launches nothing, as Triton's own launcher skips a grid whose
product is 0. This module imports neither Triton nor the compiler (the loader reads it).
"""
from __future__ import annotations

import numbers

CUDA_MAX = (2**31 - 1, 65535, 65535)
HIP_WORK_ITEMS = 2**32   # per dimension, programs x threads must stay below this
AXES = "xyz"


class GridError(ValueError):
    """A launch grid no GPU of the backend would launch: its rank, a dimension's type or size."""


def max_programs(backend: str, threads: int) -> tuple[int, int, int]:
    """The most programs along x, y, z for ``backend`` (``cuda``/``hip``) with ``threads`` per program."""
    if backend == "hip":
        return ((HIP_WORK_ITEMS - 1) // threads, HIP_WORK_ITEMS - 1, HIP_WORK_ITEMS - 1)
    return CUDA_MAX


def check_grid(grid, backend: str, threads: int, kernel: str) -> tuple[int, int, int]:
    """``grid`` (an int or 1 to 3 ints) as three ints, or a ``GridError`` naming ``kernel``, the
    dimension and the limit of ``backend`` for programs of ``threads`` threads."""
    where = f"{kernel}[grid]: grid {grid!r}"
    dims = (grid, ) if isinstance(grid, numbers.Integral) else grid
    if not isinstance(dims, (tuple, list)):
        raise GridError(f"{where}: expected a tuple of 1 to 3 ints (programs along x, y, z), "
                        f"got {type(grid).__name__}")
    if not 1 <= len(dims) <= 3:
        raise GridError(f"{where}: expected 1 to 3 dimensions (x, y, z), got {len(dims) or 'none'}")
    limits = max_programs(backend, threads)
    for axis, n, most in zip(AXES, dims, limits):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise GridError(f"{where}: {axis} is {n!r}, a {type(n).__name__}; expected an int >= 0 "
                            "(a count of programs, e.g. triton.cdiv(n, BLOCK))")
        if n < 0:
            raise GridError(f"{where}: {axis} is {n}; expected an int >= 0 (0 launches nothing)")
        if n > most:
            raise GridError(f"{where}: {axis} is {n} programs; {_limit_text(backend, threads, limits)}")
    return tuple(int(n) for n in dims) + (1, ) * (3 - len(dims))


def _limit_text(backend: str, threads: int, limits: tuple[int, int, int]) -> str:
    if backend == "hip":
        return (f"HIP launches fewer than 2**32 threads per dimension, so at most {limits[0]} programs of "
                f"{threads} threads along x and {limits[1]} along y and z")
    return f"CUDA launches at most {limits[0]} (2**31-1) programs along x and {limits[1]} along y and z"
