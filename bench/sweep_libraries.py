"""How ``bench/port_sweep.py`` drives real kernel libraries: each library's public Python entry
points, called on small CPU tensors, as a user of the library calls them.

Nothing of the libraries' code is copied here: each entry imports the installed package and
calls its own op functions; the sweep records every kernel launch those calls make (their
arguments are what the library computes: strides, block sizes, warps) and runs it in the
interpreter, so a backward entry sees what its forward wrote. The libraries are bench-only
dependencies (``make port-sweep`` installs them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable



@dataclass(frozen=True)
class Entry:
    library: str
    label: str
    call: Callable[[], object]    # imports the library and calls one of its ops


def _liger_rms_norm():
    import torch
    from liger_kernel.ops import rms_norm
    x, w = torch.randn(8, 256), torch.randn(256)
    y, x2, rstd, block, warps, mode = rms_norm.rms_norm_forward(x, w, 1e-6, 0.0, "llama", None)
    rms_norm.rms_norm_backward(torch.randn_like(y), x2, w, rstd, 0.0, mode, block, warps, False, None)


def _liger_swiglu():
    import torch
    from liger_kernel.ops import swiglu
    a, b = torch.randn(8, 128), torch.randn(8, 128)
    _, _, c = swiglu.swiglu_forward(a, b)
    swiglu.swiglu_backward(a, b, torch.randn_like(c))


def _liger_geglu():
    import torch
    from liger_kernel.ops import geglu
    a, b = torch.randn(8, 128), torch.randn(8, 128)
    _, _, c = geglu.geglu_forward(a, b)
    geglu.geglu_backward(a, b, torch.randn_like(c))


def _liger_layer_norm():
    import torch
    from liger_kernel.ops import layer_norm
    x, w, b = torch.randn(8, 256), torch.randn(256), torch.randn(256)
    layer_norm.layer_norm_forward(x, w, b, 1e-6)


def _liger_cross_entropy():
    import torch
    from liger_kernel.ops import cross_entropy
    logits, target = torch.randn(8, 512), torch.randint(0, 512, (8,))
    cross_entropy.cross_entropy_forward(logits, target, None, -100, 0.0, 0.0, "mean", None, False)


def _liger_relu_squared():
    import torch
    from liger_kernel.ops import relu_squared
    x = torch.randn(8, 256)
    relu_squared.relu_squared_forward(x)


def _liger_softmax():
    import torch
    from liger_kernel.ops import softmax
    softmax._softmax_forward(torch.randn(8, 256))


def _liger_kl_div():
    import torch
    from liger_kernel.ops import kl_div
    p = torch.randn(8, 256).log_softmax(-1)
    q = torch.randn(8, 256).softmax(-1)
    kl_div.kldiv_forward_triton(p, q, False, "batchmean", 1e-10)


def _liger_fused_moe():
    import torch
    from liger_kernel.ops.fused_moe import LigerFusedMoEFunction
    T, H, inner, E, K = 16, 64, 64, 4, 2
    x = torch.randn(T, H)
    gate_up, down = torch.randn(E, 2 * inner, H) / 8, torch.randn(E, H, inner) / 8
    index = torch.stack([torch.randperm(E)[:K] for _ in range(T)]).to(torch.int32)
    LigerFusedMoEFunction.apply(x, gate_up, down, index, torch.rand(T, K))


def _fla_chunk_o():
    import torch
    from fla.ops.common.chunk_o import chunk_fwd_o
    B, T, H, K, V, BT = 1, 64, 2, 32, 32, 16
    q, k, v = (torch.randn(B, T, H, d) for d in (K, K, V))
    h = torch.randn(B, T // BT, H, K, V)
    chunk_fwd_o(q=q, k=k, v=v, h=h, g=None, scale=K ** -0.5, chunk_size=BT)


def _fla_chunk_o_gated():
    """``chunk_fwd_o`` with a gate: ``USE_G`` reaches fla's ``exp2`` helper, called at two sites
    on a row vector and on a square tile (the ungated call above leaves it uncalled)."""
    import torch
    from fla.ops.common.chunk_o import chunk_fwd_o
    B, T, H, K, V, BT = 1, 64, 2, 32, 32, 16
    q, k, v = (torch.randn(B, T, H, d) for d in (K, K, V))
    h = torch.randn(B, T // BT, H, K, V)
    g = -torch.rand(B, T, H).cumsum(1)
    chunk_fwd_o(q=q, k=k, v=v, h=h, g=g, scale=K ** -0.5, chunk_size=BT)


def _fla_scaled_dot_kkt():
    """beta * K K^T per chunk with a gate: fla's ``exp2`` on the gate differences."""
    import torch
    from fla.ops.common.chunk_scaled_dot_kkt import chunk_scaled_dot_kkt_fwd
    B, T, H, K = 1, 64, 2, 32
    g = -torch.rand(B, T, H).cumsum(1)
    chunk_scaled_dot_kkt_fwd(torch.randn(B, T, H, K), g=g, beta=torch.rand(B, T, H), chunk_size=16)


def _fla_cumsum():
    import torch
    from fla.ops.utils.cumsum import chunk_local_cumsum_scalar
    chunk_local_cumsum_scalar(torch.randn(1, 64, 2), chunk_size=16)


def _fla_softmax():
    import torch
    from fla.ops.utils.softmax import softmax_fwd
    softmax_fwd(torch.randn(8, 256))


def _fla_logsumexp():
    import torch
    from fla.ops.utils.logsumexp import logsumexp_fwd
    logsumexp_fwd(torch.randn(8, 256))


ENTRIES = (
    Entry("liger-kernel", "rms_norm", _liger_rms_norm),
    Entry("liger-kernel", "swiglu", _liger_swiglu),
    Entry("liger-kernel", "geglu", _liger_geglu),
    Entry("liger-kernel", "layer_norm", _liger_layer_norm),
    Entry("liger-kernel", "cross_entropy", _liger_cross_entropy),
    Entry("liger-kernel", "relu_squared", _liger_relu_squared),
    Entry("liger-kernel", "softmax", _liger_softmax),
    Entry("liger-kernel", "kl_div", _liger_kl_div),
    Entry("liger-kernel", "fused_moe", _liger_fused_moe),
    Entry("flash-linear-attention", "chunk_o", _fla_chunk_o),
    Entry("flash-linear-attention", "chunk_o_gated", _fla_chunk_o_gated),
    Entry("flash-linear-attention", "scaled_dot_kkt", _fla_scaled_dot_kkt),
    Entry("flash-linear-attention", "cumsum", _fla_cumsum),
    Entry("flash-linear-attention", "softmax", _fla_softmax),
    Entry("flash-linear-attention", "logsumexp", _fla_logsumexp),
)
