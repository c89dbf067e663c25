"""Per-target choices the examples make explicitly, and the pure-Triton baseline build."""
import triton
from triton.compiler import ASTSource
from triton.experimental.gluon import language as gl

from hybrid.compile import specialization
from hybrid.targets import TARGETS


def tile_layout(target: str, num_warps: int) -> gl.BlockedLayout:
    """A row-major 2D layout, 4 contiguous elements per thread, for 32- or 64-wide warps."""
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([1, 4], [warp // 8, 8], [num_warps, 1], [1, 0])


def row_layout(target: str, num_warps: int, row: int) -> gl.BlockedLayout:
    """Whole rows of ``row`` contiguous elements across a warp, 4 per thread: the layout Triton's
    coalescing gives such a tile, so a Gluon region written in it costs no boundary conversion."""
    warp = TARGETS[target].warp_size
    across = min(row // 4, warp)
    return gl.BlockedLayout([1, 4], [warp // across, across], [num_warps, 1], [1, 0])


def compile_triton(kernel, signature: dict, constexprs: dict, target: str, num_warps: int):
    """Plain ``triton.compile`` of an all-Triton kernel, specialized like ``hybrid.compile``."""
    full_signature, attrs = specialization(kernel, signature, constexprs)
    return triton.compile(ASTSource(kernel, full_signature, constexprs, attrs), target=TARGETS[target],
                          options={"num_warps": num_warps})
