"""The conformance suite's kernels: one or more per upstream tutorial topic, written in the
tutorials' patterns at small tiles, and where each may exist.

Gluon (``python/tutorials/gluon``): layouts, async copy, TMA, wgmma, tcgen05, warp
specialization (most kernels are ``tests/interp_kernels.py``'s). Triton (``python/tutorials``):
vector add, softmax, matmul, layer norm, attention. Mixed: a Triton host with a wgmma or TMA
Gluon region, a Gluon host with Triton regions around a wgmma mainloop. Each ``Case`` says
which targets its ops exist on (``interop.targets.arch``); ``tests/test_conformance.py`` compiles it for
every target (``python -m tests.conformance_kernels TARGET``, one process per target) and runs
it in the interpreter against torch, and on the other targets expects the same error from both.
"""
from __future__ import annotations

import json
import math
import sys
import traceback
from dataclasses import dataclass, field
from typing import Callable

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.ampere import mbarrier as ampere_mbarrier
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from bench import parity_ports as pp
from examples import matmul_gluon_epilogue, matmul_wgmma, mma_handoff
from examples.layouts import row_layout, tile_layout
from interop.targets import TARGETS
from interop.triton import compat
from tests import interp_kernels as ik

cp_async = compat.gluon_async_copy()
tma_load, tma_store = compat.gluon_tma_copies()

NVIDIA_90 = ("sm90a", "sm100a")


# -- Gluon: async copy completed on an mbarrier (tutorial 3's variant without wait groups) -------
@gluon.jit
def cp_async_mbarrier_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    """cp.async copies whose completion arrives on an mbarrier (no commit/wait groups)."""
    bar = gl.allocate_shared_memory(gl.int64, [1], ampere_mbarrier.MBarrierLayout())
    ampere_mbarrier.init(bar, count=1)
    smem = gl.allocate_shared_memory(gl.float32, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    offs = gl.arange(0, BLOCK, layout=L)
    cp_async(smem, x_ptr + offs)
    async_copy.mbarrier_arrive(bar, increment_count=False)
    ampere_mbarrier.wait(bar, phase=0)
    ampere_mbarrier.invalidate(bar)
    gl.store(y_ptr + offs, smem.load(L) + 1.0)


# -- Gluon: TMA with descriptors made on the device, multi-buffered (tutorials 4 and 7) ----------
@gluon.jit
def tma_pipeline_kernel(x_ptr, y_ptr, M, N, BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr,
                        L: gl.constexpr):
    """y[rows] = x[rows] * 2 for the program's tiles, loaded ``STAGES`` ahead through a ring of
    TMA buffers (``[STAGES] + desc.block_type.shape``), stored by TMA (clipped at the edges)."""
    layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BM, BN], gl.float32)
    x_desc = tma.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], layout)
    y_desc = tma.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN], layout)
    ring = gl.allocate_shared_memory(gl.float32, [STAGES] + x_desc.block_type.shape, layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    n_tiles = gl.cdiv(M, BM)
    for i in gl.static_range(STAGES):
        mbarrier.expect(bars.index(i), x_desc.block_type.nbytes)
        tma_load(x_desc, [i * BM, 0], bars.index(i), ring.index(i))
    for t in range(n_tiles):
        slot = t % STAGES
        mbarrier.wait(bars.index(slot), (t // STAGES) & 1)
        tile = ring.index(slot).load(L) * 2.0
        ring.index(slot).store(tile)
        ik.fence_async_shared()
        tma_store(y_desc, [t * BM, 0], ring.index(slot))
        if t + STAGES < n_tiles:
            tma.store_wait(0)                 # the slot's store has read it: load the next tile there
            mbarrier.expect(bars.index(slot), x_desc.block_type.nbytes)
            tma_load(x_desc, [(t + STAGES) * BM, 0], bars.index(slot), ring.index(slot))
    tma.store_wait(0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))


# -- Triton tutorial 1: vector add ---------------------------------------------------------------
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


# -- Triton tutorial 2: fused softmax (persistent rows; ``num_stages`` is a kernel parameter) ----
@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=col_offsets < n_cols,
                      other=-float("inf"))
        numerator = tl.exp(row - tl.max(row, axis=0))
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, numerator / tl.sum(numerator, axis=0),
                 mask=col_offsets < n_cols)


# -- Triton tutorial 3: matmul (autotuned, grouped tile order, fused activation) -----------------
@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16,
                                         "GROUP_SIZE_M": 2}, num_stages=2, num_warps=4),
                          triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                                         "GROUP_SIZE_M": 4}, num_stages=2, num_warps=2)],
                 key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


# -- Triton tutorial 5: layer norm forward ----------------------------------------------------------
@triton.jit
def layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        _mean += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    rstd = 1 / tl.sqrt(tl.sum(_var, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = (x - mean) * rstd * tl.load(W + cols, mask=mask) + tl.load(B + cols, mask=mask)
        tl.store(Y + cols, y, mask=mask)


# -- Triton tutorial 6: fused attention forward (device-made tensor descriptors, autotuned):
#    bench/parity_ports.py's attn_fwd, its port rows' kernel
def _prune_attention(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK_M"] <= kwargs["N_CTX"] and c.kwargs["BLOCK_N"] <= c.kwargs["BLOCK_M"]]


attn_fwd = triton.autotune(
    configs=[triton.Config({"BLOCK_M": 32, "BLOCK_N": 16}, num_stages=2, num_warps=4),
             triton.Config({"BLOCK_M": 16, "BLOCK_N": 32}, num_stages=2, num_warps=4),
             triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_stages=2, num_warps=4)],
    key=["N_CTX", "HEAD_DIM"], prune_configs_by={"early_config_prune": _prune_attention})(pp.attn_fwd)


# -- cases ---------------------------------------------------------------------------------------
@dataclass
class Launch:
    """One launch: the kernel's runtime arguments in order, its constexprs and grid, and what torch
    says each output must hold afterwards: ``expected`` maps an argument name to its reference
    (a descriptor argument's tensor is ``written[name]``), compared within ``tolerance``."""
    args: dict
    constexprs: dict
    grid: object                                 # a tuple, or a function of the launch's arguments
    expected: dict
    tolerance: float = 0.0
    options: dict = field(default_factory=dict)  # launch options: num_warps (default 4)
    written: dict = field(default_factory=dict)

    def output(self, name: str) -> torch.Tensor:
        return self.written.get(name, self.args.get(name))


@dataclass(frozen=True)
class Case:
    name: str
    topic: str
    kernel: object                  # a JITFunction, or an autotuner wrapping one
    targets: tuple[str, ...]        # where its ops exist: built there, the same error from both elsewhere
    launch: Callable[[str], Launch]


def _blocked_2d(target: str, num_warps: int = 4) -> gl.BlockedLayout:
    return tile_layout(target, num_warps)


def _vector(target: str, vec: int = 1, num_warps: int = 4) -> gl.BlockedLayout:
    return gl.BlockedLayout([vec], [TARGETS[target].warp_size], [num_warps], [0])


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(20)


def _randn(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_generator()).to(dtype)


def _nan(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype)


def _layouts(target):
    x, y = _randn(70, 50), _nan(50, 70)
    load = gl.BlockedLayout([1, 4], [TARGETS[target].warp_size // 8, 8], [4, 1], [1, 0])
    store = gl.BlockedLayout([4, 1], [8, TARGETS[target].warp_size // 8], [1, 4], [0, 1])
    return Launch({"x_ptr": x, "y_ptr": y, "M": 70, "N": 50, "stride_x": 50, "stride_y": 70},
                  {"BM": 32, "BN": 32, "LOAD": load, "STORE": store}, (3, 2), {"y_ptr": x.T})


def _async_copy(target):
    x = _randn(256)
    return Launch({"x_ptr": x, "y_ptr": _nan(256)}, {"BLOCK": 128, "L": _vector(target),
                                                       "S": gl.SwizzledSharedLayout(1, 1, 1, [0])},
                  (1, ), {"y_ptr": 2 * x})


def _async_copy_mbarrier(target):
    x = _randn(128)
    return Launch({"x_ptr": x, "y_ptr": _nan(128)}, {"BLOCK": 128, "L": _vector(target)}, (1, ), {"y_ptr": x + 1})


def _tma_host(target):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    x, y = _randn(100, 32), _nan(100, 32)
    layout = gl.NVMMASharedLayout.get_default_for([64, 32], gl.float32)
    descs = [TensorDescriptor.from_tensor(t, [64, 32], layout) for t in (x, y)]
    return Launch({"in_desc": descs[0], "out_desc": descs[1]}, {"BM": 64, "BN": 32, "L": _blocked_2d(target)},
                  (2, ), {"out_desc": x + 1}, written={"out_desc": y})


def _tma_pipeline(target):
    x = _randn(100, 32)
    return Launch({"x_ptr": x, "y_ptr": _nan(100, 32), "M": 100, "N": 32},
                  {"BM": 16, "BN": 32, "STAGES": 2, "L": _blocked_2d(target)}, (1, ), {"y_ptr": 2 * x})


def _mma_operands(M, N, K):
    return _randn(M, K, dtype=torch.float16), _randn(K, N, dtype=torch.float16) / 4


def _mma(target, M: int, N: int, K: int, **layouts) -> Launch:
    """C = A @ B for ``ik``'s MMA kernels: fp16 operands in NVMMA shared memory, ``layouts`` the
    kernel's own (its accumulator's)."""
    a, b = _mma_operands(M, N, K)
    return Launch({"a_ptr": a, "b_ptr": b, "c_ptr": _nan(M, N)},
                  {"M": M, "N": N, "K": K, "L": _blocked_2d(target),
                   "SA": gl.NVMMASharedLayout.get_default_for([M, K], gl.float16),
                   "SB": gl.NVMMASharedLayout.get_default_for([K, N], gl.float16), **layouts},
                  (1, ), {"c_ptr": a.float() @ b.float()}, tolerance=1e-2)


def _wgmma(target):
    return _mma(target, 64, 32, 32, ACC=gl.NVMMADistributedLayout([3, 0], [4, 1], [16, 32, 16]))


def _tcgen05(target):
    return _mma(target, 128, 32, 32, REG=compat.tmem_reg_layout(gl.float32, [128, 32], (128, 32), 4))


def _warp_specialize(target):
    x = _randn(6, 128)
    return Launch({"x_ptr": x, "y_ptr": _nan(128), "n_tiles": 6}, {"BLOCK": 128, "STAGES": 2, "ARRIVE": True},
                  (1, ), {"y_ptr": x.sum(0)}, tolerance=1e-5)


def _vector_add(target):
    x, y = _randn(1000), _randn(1000) * 3
    return Launch({"x_ptr": x, "y_ptr": y, "output_ptr": _nan(1000), "n_elements": 1000}, {"BLOCK_SIZE": 256},
                  (4, ), {"output_ptr": x + y})


def _softmax(target):
    x = _randn(37, 100)
    return Launch({"output_ptr": _nan(37, 100), "input_ptr": x, "input_row_stride": 100, "output_row_stride": 100,
                   "n_rows": 37, "n_cols": 100}, {"BLOCK_SIZE": 128, "num_stages": 2}, (8, ),
                  {"output_ptr": torch.softmax(x, dim=1)}, tolerance=1e-6, options={"num_warps": 4})


def _matmul(target):
    M, N, K = 70, 50, 40
    a, b = _randn(M, K, dtype=torch.float16), _randn(K, N, dtype=torch.float16)
    c = _nan(M, N, dtype=torch.float16)
    ref = a.float() @ b.float()
    return Launch({"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": M, "N": N, "K": K, "stride_am": K, "stride_ak": 1,
                   "stride_bk": N, "stride_bn": 1, "stride_cm": N, "stride_cn": 1}, {"ACTIVATION": "leaky_relu"},
                  lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]), ),
                  {"c_ptr": torch.where(ref >= 0, ref, 0.01 * ref).half()}, tolerance=2e-2)


def _layer_norm(target):
    M, N, eps = 9, 300, 1e-5
    x = _randn(M, N) * 2 + 1
    w, b = _randn(N) + 1, _randn(N)
    y = torch.nn.functional.layer_norm(x, (N, ), w, b, eps)
    return Launch({"X": x, "Y": _nan(M, N), "W": w, "B": b, "Mean": _nan(M), "Rstd": _nan(M), "stride": N, "N": N,
                   "eps": eps}, {"BLOCK_SIZE": 128}, (M, ),
                  {"Y": y, "Mean": x.mean(1), "Rstd": 1 / torch.sqrt(x.var(1, unbiased=False) + eps)},
                  tolerance=1e-4)


def _attention(target):
    Z, H, N_CTX, HEAD_DIM, sm_scale = 1, 2, 64, 16, 0.5
    q, k, v = (_randn(Z, H, N_CTX, HEAD_DIM, dtype=torch.float16) * s for s in (1.0, 0.5, 1.0))
    mask = torch.tril(torch.ones(N_CTX, N_CTX, dtype=torch.bool))
    scores = (q.float() @ k.float().transpose(-1, -2) * sm_scale).masked_fill(~mask, float("-inf"))
    ref = torch.softmax(scores, dim=-1) @ v.float()
    logsumexp = torch.logsumexp(scores, dim=-1) / math.log(2)
    return Launch({"sm_scale": sm_scale, "M": _nan(Z * H, N_CTX), "Z": Z, "H": H, "q_ptr": q, "k_ptr": k,
                   "v_ptr": v, "o_ptr": _nan(Z, H, N_CTX, HEAD_DIM, dtype=torch.float16)},
                  {"N_CTX": N_CTX, "HEAD_DIM": HEAD_DIM, "STAGE": 3},
                  lambda meta: (triton.cdiv(N_CTX, meta["BLOCK_M"]), Z * H),
                  {"o_ptr": ref.half(), "M": logsumexp.reshape(Z * H, N_CTX)}, tolerance=2e-2)


def _handoff_wgmma(target):
    """examples/mma_handoff.py's Triton host with its wgmma region on every target."""
    M, N = 70, 50
    p = mma_handoff.problem(M, N, device="cpu")
    cx = mma_handoff.constexprs("sm90a") | {"BM": 64, "BN": 32}   # MMA="wgmma" whatever the target
    cx["ACC"] = gl.NVMMADistributedLayout([3, 0], [4, 1], [16, 32, 16])
    cx["SA"] = gl.NVMMASharedLayout.get_default_for([64, mma_handoff.K], gl.float16)
    cx["SB"] = gl.NVMMASharedLayout.get_default_for([mma_handoff.K, 32], gl.float16)
    ref = (p["a"].float() * p["s"][:, None]).half().float() @ p["b"].float()
    return Launch({"a_ptr": p["a"], "s_ptr": p["s"], "b_ptr": p["b"], "c_ptr": p["c"], "M": M, "N": N}, cx,
                  (2, 2), {"c_ptr": ref}, tolerance=1e-2)


def _tma_epilogue(target):
    """examples/matmul_gluon_epilogue.py's Triton host with its TMA-store region on every target."""
    M, N, K = 70, 50, 40
    a, b = _mma_operands(M, N, K)
    return Launch({"a_ptr": a, "b_ptr": b, "c_ptr": _nan(M, N, dtype=torch.float16), "M": M, "N": N, "K": K,
                   "stride_am": K, "stride_bk": N, "stride_cm": N},
                  {"BM": 32, "BN": 32, "BK": 16, "L": _blocked_2d(target), "TMA": True, "FROM_ACC": False}, (3, 2),
                  {"c_ptr": (a.float() @ b.float()).half()}, tolerance=1e-2)


def _wgmma_mainloop(target):
    """examples/matmul_wgmma.py's Gluon host (Triton regions around a wgmma mainloop) on every target."""
    M, N, K = 70, 64, 160   # cp.async needs 16-byte rows: N, K multiples of 8 (the launch specializes them)
    a, b = _randn(M, K, dtype=torch.bfloat16), _randn(K, N, dtype=torch.bfloat16)
    cx = {"BM": 64, "BN": 64, "BK": 64, "GROUP_M": 2, "STAGES": 3,
          "ACC": gl.NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16]),
          "LA": row_layout(target, 4, 64, vec=8), "LB": row_layout(target, 4, 64, vec=8)}
    return Launch({"a_ptr": a, "b_ptr": b, "c_ptr": _nan(M, N, dtype=torch.bfloat16), "M": M, "N": N, "K": K,
                   "stride_am": K, "stride_bk": N, "stride_cm": N}, cx, (2, ),
                  {"c_ptr": (a.float() @ b.float()).bfloat16()}, tolerance=2e-2)


ALL = tuple(TARGETS)
CASES: dict[str, Case] = {c.name: c for c in (
    Case("layouts", "Gluon: layouts (a transpose through two blocked layouts)", ik.transpose_kernel, ALL, _layouts),
    Case("async_copy", "Gluon: async copy (commit and wait groups)", ik.cp_async_kernel, ALL, _async_copy),
    Case("async_copy_mbarrier", "Gluon: async copy completed on an mbarrier", cp_async_mbarrier_kernel,
         ("sm80", ) + NVIDIA_90, _async_copy_mbarrier),
    Case("tma_host", "Gluon: TMA (host descriptors)", ik.tma_kernel, NVIDIA_90, _tma_host),
    Case("tma_pipeline", "Gluon: TMA (device descriptors, a ring of buffers)", tma_pipeline_kernel, NVIDIA_90,
         _tma_pipeline),
    Case("wgmma", "Gluon: wgmma", ik.wgmma_kernel, ("sm90a", ), _wgmma),
    Case("tcgen05", "Gluon: tcgen05 and tensor memory", ik.tcgen05_kernel, ("sm100a", ), _tcgen05),
    Case("warp_specialize", "Gluon: warp specialization (a producer partition)", ik.pipeline_kernel, NVIDIA_90,
         _warp_specialize),
    Case("vector_add", "Triton: vector add", add_kernel, ALL, _vector_add),
    Case("softmax", "Triton: fused softmax", softmax_kernel, ALL, _softmax),
    Case("matmul", "Triton: matmul (autotuned)", matmul_kernel, ALL, _matmul),
    Case("layer_norm", "Triton: layer norm", layer_norm_fwd_fused, ALL, _layer_norm),
    Case("attention", "Triton: fused attention (device descriptors, autotuned)", attn_fwd, ALL, _attention),
    Case("handoff_wgmma", "mixed: Triton host, Gluon wgmma region", mma_handoff.mma_kernel, ("sm90a", ),
         _handoff_wgmma),
    Case("tma_epilogue", "mixed: Triton host, Gluon TMA-store region", matmul_gluon_epilogue.matmul_kernel,
         NVIDIA_90, _tma_epilogue),
    Case("wgmma_mainloop", "mixed: Gluon host, wgmma mainloop, Triton regions", matmul_wgmma.matmul_kernel,
         ("sm90a", ), _wgmma_mainloop),
)}


def resolve(case: Case, launch: Launch) -> tuple:
    """(the JITFunction, its constexprs, the launch options) as launched: for an autotuned kernel,
    with the config the interpreter runs (the first after pruning)."""
    from hybrid.interpret.autotune import is_wrapped, pruned_configs
    from hybrid.interpret.launch import LAUNCH_OPTIONS
    constexprs = dict(launch.constexprs)
    # as Triton's JIT reads a launch: a constexpr named like a launch option is that option too
    options = {"num_warps": 4} | {k: v for k, v in constexprs.items() if k in LAUNCH_OPTIONS} | launch.options
    kernel = case.kernel
    if is_wrapped(kernel):
        config = pruned_configs(kernel, tuple(launch.args.values()), constexprs)[0]
        constexprs |= config.kwargs
        options |= {"num_warps": config.num_warps, "num_stages": config.num_stages}
        kernel = kernel.fn
    return kernel, constexprs, options


def compile_case(case: Case, target: str) -> dict:
    """``hybrid.compile`` the case for ``target``: what was built, or the error as raised."""
    import hybrid
    from interop.triton.frontend import mangle_type
    launch = case.launch(target)
    kernel, constexprs, options = resolve(case, launch)
    signature = {name: mangle_type(value) for name, value in launch.args.items()}
    divisible = [name for name, value in launch.args.items()   # as Triton's JIT specializes such values
                 if type(value) is int and value % 16 == 0]
    try:
        fb = hybrid.compile(kernel, signature, constexprs, target=target, divisible=divisible, **options)
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()[-4000:]}
    return {"entries": fb.kernel_entries, "binary_bytes": len(fb.binary)}


def main(target: str, *names: str) -> None:
    """One JSON line per case (``start`` first, so that a signal names the case it hit)."""
    for name in names or CASES:
        print(json.dumps({"case": name, "start": True}), flush=True)
        print(json.dumps({"case": name, **compile_case(CASES[name], target)}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
