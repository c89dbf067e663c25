"""Boundary shapes and layout pairs for ``bench/boundaries.py`` (and the planner's tests).

One Triton kernel (a CTA per tile) loads a tile, hands it to a Gluon function that declares the
layout it computes in (``@hybrid.takes``), and stores the result; with ``READERS=2`` it also
stores the transpose, so the result crosses back in two layouts. The declared layout is the pair's other
side: Triton's own choice for a coalesced row-major tile on one side, ``W`` on the other.
"""
from __future__ import annotations

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.targets import TARGETS

NUM_WARPS = 4


@hybrid.takes(x="W")
@gluon.jit
def g_scale(x, W: gl.constexpr):
    return x * 2


@hybrid.jit
@triton.jit
def h_boundary(x_ptr, y_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, W: tl.constexpr, READERS: tl.constexpr):
    tile = tl.program_id(0) * M * N
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    y = g_scale(tl.load(x_ptr + tile + rows * N + cols), W)
    tl.store(y_ptr + tile + rows * N + cols, y)
    if READERS == 2:
        tl.store(z_ptr + tile + cols * M + rows, y)


def layouts(target: str) -> dict:
    """name -> the Gluon function's declared layout for ``target``'s warp size (4 warps)."""
    warp = TARGETS[target].warp_size
    return {
        "row vectors": gl.BlockedLayout([1, 4], [warp // 16, 16], [NUM_WARPS, 1], [1, 0]),
        "narrow rows": gl.BlockedLayout([1, 2], [warp // 8, 8], [NUM_WARPS, 1], [1, 0]),
        "columns": gl.BlockedLayout([4, 1], [16, warp // 16], [1, NUM_WARPS], [0, 1]),
        "warps by column": gl.BlockedLayout([1, 1], [warp // 8, 8], [1, NUM_WARPS], [1, 0]),
    }


SHAPES = {"64x64 fp32": (64, 64, "fp32"), "128x64 fp16": (128, 64, "fp16")}
READERS = (1, 2)


def cases(target: str, names=None) -> list[dict]:
    """Every (shape, layout, readers) combination, each with what ``hybrid.compile`` needs."""
    out = []
    for shape, (m, n, dtype) in SHAPES.items():
        for layout, w in layouts(target).items():
            for readers in READERS:
                name = f"{shape}, {layout}, {readers} reader{'s' if readers > 1 else ''}"
                if names is None or name in names:
                    pointer = f"*{dtype}"
                    out.append({"name": name, "shape": (m, n), "dtype": dtype, "readers": readers,
                                "signature": {"x_ptr": pointer, "y_ptr": pointer, "z_ptr": pointer},
                                "constexprs": {"M": m, "N": n, "W": w, "READERS": readers}})
    return out


def build(case: dict, target: str, boundaries: str = "auto") -> hybrid.FusedBinary:
    return hybrid.compile(h_boundary, case["signature"], case["constexprs"], target=target, num_warps=NUM_WARPS,
                          boundaries=boundaries)


def launch(case: dict, x, y, z, tiles: int) -> None:
    """One launch over ``tiles`` tiles under the boundary mode in effect (``hybrid.boundary_mode``)."""
    h_boundary[(tiles, )](x, y, z, num_warps=NUM_WARPS, **case["constexprs"])
