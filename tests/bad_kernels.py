"""Kernels with mistakes, each compiled in its own subprocess by test_errors.py."""
import sys

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton.experimental.gluon.language.nvidia import hopper
from triton.experimental.gluon.language.nvidia.ampere import async_copy

import hybrid
from tests import triton_hosts
from interop.triton.compat import gluon_async_copy
from tests.kernels import t_load_tile, t_store_block, vec_1d

async_load = gluon_async_copy()


@triton.jit
def t_shape_bug(x):
    return x + tl.arange(0, 16)          # 16 elements against the caller's 512


@triton.jit
def t_identity(x):
    return x


@hybrid.jit
@gluon.jit
def k_shape_mismatch(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    y = t_shape_bug(gl.load(x_ptr + offs))
    gl.store(y_ptr + offs, gl.convert_layout(y, L1))


@hybrid.jit
@gluon.jit
def k_shared_into_region(x_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float32, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    t_identity(smem)


@hybrid.jit
@gluon.jit
def k_inline_layout(x_ptr, BLOCK: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0]))   # 32-wide warps only
    gl.store(x_ptr + offs, offs.to(gl.float32))


@hybrid.jit
@gluon.jit
def k_region_inline_layout(x_ptr, BLOCK: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0]))   # 32-wide warps only
    gl.store(x_ptr + offs, t_identity(gl.load(x_ptr + offs)))


@gluon.jit
def g_shape_bug(x, L1: gl.constexpr):
    return gl.convert_layout(x, L1) + gl.arange(0, 16, layout=L1)   # 16 elements against the caller's 512


@gluon.jit
def g_hopper_fence(x):
    hopper.fence_async_shared()                                     # sm90+ only
    return x


@gluon.jit
def g_inline_layout(x):
    return gl.convert_layout(x, gl.BlockedLayout([1], [32], [4], [0]))   # 32-wide warps, 4 warps only


@hybrid.jit
@triton.jit
def h_call_1d(x_ptr, BLOCK: tl.constexpr, REGION: tl.constexpr):
    """A Triton host handing a loaded vector to the Gluon function ``REGION``."""
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, REGION(tl.load(x_ptr + offs)))


@hybrid.jit
@triton.jit
def h_gluon_shape_bug(x_ptr, BLOCK: tl.constexpr, L1: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, g_shape_bug(tl.load(x_ptr + offs), L1))


@hybrid.jit
@gluon.jit
def k_hopper_op(x_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    hopper.fence_async_shared()                                     # sm90+ only, in a Gluon host
    gl.store(x_ptr + offs, offs.to(gl.float32))


@gluon.jit
def g_big_buffer(x):
    smem = gl.allocate_shared_memory(gl.float32, [512, 256], gl.SwizzledSharedLayout(1, 1, 1, [0]))   # 512 KiB
    smem.index(0).store(x)
    return x


@hybrid.jit
@triton.jit
def h_too_much_shared(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, g_big_buffer(tl.load(x_ptr + offs)))


@hybrid.takes(x=gl.BlockedLayout([1], [64], [4], [0]))        # a wave64 layout
@gluon.jit
def g_takes_wave64(x):
    return x + 1.0


@hybrid.takes(n=gl.BlockedLayout([1], [32], [4], [0]))
@gluon.jit
def g_takes_scalar(x, n):
    return x + n


@hybrid.jit
@triton.jit
def h_takes_scalar(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, g_takes_scalar(tl.load(x_ptr + offs), n))


@hybrid.takes(x=hybrid.shared(gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),
              y=hybrid.shared(gl.SwizzledSharedLayout(1, 1, 1, [1, 0])))
@gluon.jit
def g_two_shared_tiles(x, y, L: gl.constexpr):
    return x.load(L) + y.load(L)


@hybrid.jit
@triton.jit
def h_big_handoff(x_ptr, B: tl.constexpr, L: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(x_ptr + r[:, None] * B + r[None, :], g_two_shared_tiles(x, x * 2.0, L))   # 2 x 64 KiB handed over


@hybrid.takes(x=hybrid.shared(gl.SwizzledSharedLayout(1, 1, 1, [0])))   # rank 1, for a 2-D tile
@gluon.jit
def g_rank_mismatch(x, L: gl.constexpr):
    return x.load(L)


@hybrid.jit
@triton.jit
def h_rank_mismatch(x_ptr, B: tl.constexpr, L: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(x_ptr + r[:, None] * B + r[None, :], g_rank_mismatch(tl.load(x_ptr + r[:, None] * B + r[None, :]), L))


@hybrid.jit
@gluon.jit
def k_stage_rank(x_ptr, B: gl.constexpr, L1: gl.constexpr):
    tile = hybrid.stage(t_load_tile(x_ptr, B), L1)   # a 1-D reader layout for a 2-D tile
    tile.store(tile.load(gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])))


@gluon.jit
def g_staged_copy(ptrs, L: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [16, 64], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    async_load(smem, gl.convert_layout(ptrs, L))   # cp.async: 4 to 16 bytes per copy
    async_copy.commit_group()
    async_copy.wait_group(0)
    return smem.load(L)


@hybrid.jit
@triton.jit
def h_staged_copy(x_ptr, y_ptr, stride, L: tl.constexpr):
    rows, cols = tl.arange(0, 16), tl.arange(0, 64)
    tile = g_staged_copy(x_ptr + rows[:, None] * stride + cols[None, :], L)
    tl.store(y_ptr + rows[:, None] * 64 + cols[None, :], tile)


def _staged_copy(target: str, divisible: tuple):
    return hybrid.compile(h_staged_copy, {"x_ptr": "*fp16", "y_ptr": "*fp16", "stride": "i32"},
                          {"L": gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])}, target=target, divisible=divisible)


def _mma_with_swizzled_a(target: str):
    from examples import mma_handoff
    constexprs = {**mma_handoff.constexprs(target), "SA": gl.SwizzledSharedLayout(1, 1, 1, [1, 0])}
    return hybrid.compile(mma_handoff.mma_kernel, mma_handoff.SIGNATURE, constexprs, target=target)


def main(case: str, target: str) -> None:
    L1 = vec_1d("sm90a")   # a 32-thread layout: wrong on AMD targets
    builds = {
        "shape_mismatch": lambda: hybrid.compile(k_shape_mismatch, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                                                 {"BLOCK": 512, "L1": L1}, target=target),
        "shared_into_region": lambda: hybrid.compile(k_shared_into_region, {"x_ptr": "*fp32"},
                                                     {"BLOCK": 512, "L1": L1}, target=target),
        "constexpr_layout": lambda: hybrid.compile(k_shape_mismatch, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                                                   {"BLOCK": 512, "L1": L1}, target=target),
        "warps": lambda: hybrid.compile(k_shape_mismatch, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                                        {"BLOCK": 512, "L1": L1}, target=target, num_warps=8),
        "inline_layout": lambda: hybrid.compile(k_inline_layout, {"x_ptr": "*fp32"}, {"BLOCK": 512}, target=target),
        "region_inline_layout": lambda: hybrid.compile(k_region_inline_layout, {"x_ptr": "*fp32"}, {"BLOCK": 512},
                                                       target=target),
        "gluon_shape_bug": lambda: hybrid.compile(h_gluon_shape_bug, {"x_ptr": "*fp32"},
                                                  {"BLOCK": 512, "L1": vec_1d(target)}, target=target),
        "gluon_inline_layout": lambda: hybrid.compile(h_call_1d, {"x_ptr": "*fp32"},
                                                      {"BLOCK": 256, "REGION": g_inline_layout},
                                                      target=target.split("/")[0],
                                                      num_warps=int(target.split("/")[1]) if "/" in target else 4),
        "gluon_wrong_arch": lambda: hybrid.compile(h_call_1d, {"x_ptr": "*fp32"},
                                                   {"BLOCK": 512, "REGION": g_hopper_fence}, target=target),
        "too_much_shared": lambda: hybrid.compile(h_too_much_shared, {"x_ptr": "*fp32"}, {"BLOCK": 256}, target=target),
        "gluon_warp_specialize": lambda: hybrid.compile(*triton_hosts.cases(target)["warp_specialized"], target=target),
        "takes_wave64": lambda: hybrid.compile(h_call_1d, {"x_ptr": "*fp32"},
                                               {"BLOCK": 256, "REGION": g_takes_wave64}, target=target),
        "takes_scalar": lambda: hybrid.compile(h_takes_scalar, {"x_ptr": "*fp32", "n": "fp32"}, {"BLOCK": 256},
                                               target=target),
        "handoff_swizzled_wgmma": lambda: _mma_with_swizzled_a(target),
        "takes_rank": lambda: hybrid.compile(h_rank_mismatch, {"x_ptr": "*fp32"},
                                             {"B": 32, "L": gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])},
                                             target=target),
        "big_handoff": lambda: hybrid.compile(h_big_handoff, {"x_ptr": "*fp32"},
                                              {"B": 128, "L": gl.BlockedLayout([1, 4], [8, 8], [4, 1], [1, 0])},
                                              target=target),
        "stage_rank": lambda: hybrid.compile(k_stage_rank, {"x_ptr": "*fp32"}, {"B": 32, "L1": vec_1d(target)},
                                             target=target),
        "misaligned_cp_async": lambda: _staged_copy(target, divisible=()),
        "aligned_cp_async": lambda: _staged_copy(target, divisible=("stride", )),   # builds
        "host_wrong_arch": lambda: hybrid.compile(k_hopper_op, {"x_ptr": "*fp32"},
                                                  {"BLOCK": 512, "L1": vec_1d(target)}, target=target),
    }
    builds[case]()


if __name__ == "__main__":
    main(*sys.argv[1:])


@hybrid.jit
@gluon.jit
def void_region_assigned(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The result of a Triton region that returns nothing, assigned and stored."""
    x = gl.load(x_ptr + gl.arange(0, BLOCK, layout=L1))
    r = t_store_block(y_ptr, x, BLOCK)
    gl.store(y_ptr + gl.arange(0, BLOCK, layout=L1), r)


@hybrid.jit
@gluon.jit
def void_region_passed(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The result of a Triton region that returns nothing, passed to a builtin."""
    x = gl.load(x_ptr + gl.arange(0, BLOCK, layout=L1))
    gl.store(y_ptr + gl.arange(0, BLOCK, layout=L1), gl.convert_layout(t_store_block(y_ptr, x, BLOCK), L1))
