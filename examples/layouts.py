"""Per-target choices the examples make explicitly, the Gluon tile stores several of them port, and
the pure-Triton / pure-Gluon baseline builds."""
import triton
from triton.compiler import ASTSource
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

from hybrid.compiler import specialization
from interop.targets import TARGETS
from interop.triton.compat import gluon_tma_copies
from interop.triton.frontend import GluonASTSource

_, tma_store = gluon_tma_copies()


def tile_layout(target: str, num_warps: int) -> gl.BlockedLayout:
    """A row-major 2D layout, 4 contiguous elements per thread, for 32- or 64-wide warps."""
    warp = TARGETS[target].warp_size
    return gl.BlockedLayout([1, 4], [warp // 8, 8], [num_warps, 1], [1, 0])


def row_layout(target: str, num_warps: int, row: int, vec: int = 4) -> gl.BlockedLayout:
    """Whole rows of ``row`` contiguous elements across a warp (and across warps where a row is
    longer than a warp covers), ``vec`` per thread: the layout Triton's coalescing gives such a tile
    (``vec`` = 16 bytes of the element type), so a Gluon region written in it costs no boundary
    conversion."""
    warp = TARGETS[target].warp_size
    across = min(row // vec, warp)
    warps_across = max(1, min(num_warps, row // (vec * across)))   # a long row spreads over warps too
    return gl.BlockedLayout([1, vec], [warp // across, across], [num_warps // warps_across, warps_across], [1, 0])


def stores_from_dot_layout(target: str) -> bool:
    """Whether Triton's backend for ``target`` stores a ``tl.dot`` result tile without converting
    it to coalesced rows first: AMD's does (from the MFMA layout on gfx942; on gfx950 its epilogue
    pass picks a linear layout near it), NVIDIA's converts to rows. A Gluon epilogue making the
    same choice stores from the layout the dot's region returns (``acc.type.layout``)."""
    return TARGETS[target].backend == "hip"


def column_layout(target: str, num_warps: int, column: int, vec: int = 4) -> gl.BlockedLayout:
    """``row_layout`` transposed: whole columns of ``column`` elements contiguous in memory along dim 0
    (a transposed view), ``vec`` per thread, warps side by side along dim 1."""
    warp = TARGETS[target].warp_size
    across = min(column // vec, warp)
    return gl.BlockedLayout([vec, 1], [across, warp // across], [1, num_warps], [0, 1])


def vector_layout(target: str, num_warps: int, vec: int = 4) -> gl.BlockedLayout:
    """A 1D layout, ``vec`` contiguous elements per thread (16 bytes of fp32: one vector access)."""
    return gl.BlockedLayout([vec], [TARGETS[target].warp_size], [num_warps], [0])


@gluon.jit
def store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM: gl.constexpr, BN: gl.constexpr, L: gl.constexpr):
    """A ported epilogue: cast to the output type first (fewer bytes to shuffle), one conversion to
    the explicit store layout ``L``, a masked store of the (pid_m, pid_n) tile of a row-major output."""
    store_tile_as_is(c_ptr, gl.convert_layout(acc.to(c_ptr.dtype.element_ty), L), M, N, stride_cm, pid_m, pid_n, BM,
                     BN)


@gluon.jit
def store_tile_as_is(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM: gl.constexpr, BN: gl.constexpr):
    """``store_tile`` without the conversion: the cast tile is stored from the layout it arrives in,
    as Triton's AMD backend stores a dot's result (``stores_from_dot_layout``)."""
    acc = acc.to(c_ptr.dtype.element_ty)
    L: gl.constexpr = acc.type.layout
    rm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, L))
    rn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, L))
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    gl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=mask)


@gluon.jit
def store_tile_tma(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BM: gl.constexpr, BN: gl.constexpr):
    """The same epilogue through the tensor memory accelerator (sm90a, sm100a): the cast tile goes
    once into an NVMMA-swizzled shared buffer, a fence hands it to the async proxy, one TMA store
    writes it (the hardware clips at the tensor's bounds: no mask). The descriptor is made on the
    device, in global scratch memory a launch asks ``triton.set_allocator``'s allocator for
(``use_torch_allocator``)."""
    dtype: gl.constexpr = c_ptr.dtype.element_ty
    layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, BN], dtype)
    desc = tma.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BM, BN], layout)
    smem = gl.allocate_shared_memory(dtype, [BM, BN], layout)
    smem.store(acc.to(dtype))
    fence_async_shared()
    tma_store(desc, [pid_m * BM, pid_n * BN], smem)
    tma.store_wait(0)


def has_tma(target: str) -> bool:
    return TARGETS[target].backend == "cuda" and int(TARGETS[target].arch) >= 90


def use_torch_allocator() -> None:
    """Let launches take their global scratch (device-made TMA descriptors) from torch's allocator."""
    import torch
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def compile_pure(kernel, signature: dict, constexprs: dict, target: str, num_warps: int, divisible=(), **options):
    """Plain ``triton.compile`` of an all-Triton or all-Gluon kernel (no regions), specialized like
    ``hybrid.compile``: the baselines a hybrid kernel is measured against."""
    full_signature, attrs = specialization(kernel, signature, constexprs, divisible=divisible)
    source = GluonASTSource if kernel.is_gluon() else ASTSource
    return triton.compile(source(kernel, full_signature, constexprs, attrs), target=TARGETS[target],
                          options={"num_warps": num_warps, **options})
