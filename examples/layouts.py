"""Per-target choices the Gluon parts of the examples make explicitly (warp size differs)."""
from triton.experimental.gluon import language as gl

from hybrid.targets import TARGETS


def tile_layout(target: str, num_warps: int) -> gl.BlockedLayout:
    """A row-major 2D layout, 4 contiguous elements per thread, for 32- or 64-wide warps."""
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([1, 4], [warp // 8, 8], [num_warps, 1], [1, 0])
