"""Attention forward (flash attention, fp16, causal or not, head dim 64 or 128): the kernel is
Triton's tutorial algorithm (Q tile resident, K/V tiles streamed, ``tl.dot`` on tensor cores, an
online softmax, causal diagonal blocks masked in a second stage), and ONE region is ported to
Gluon: the epilogue after the KV loop (normalization by the row sums in the accumulator's own
layout, fp16 cast, one conversion to rows of 16-byte vectors, the store; on AMD the store is
from the accumulator's MFMA layout, as Triton's AMD backend stores).

    python examples/attention.py   # builds for every target; on a GPU also checks vs torch
"""
import math

import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import compile_pure, row_layout, stores_from_dot_layout
from interop.targets import TARGETS

#: Each benchmark case: its own specialization (``HEAD_DIM`` and ``CAUSAL`` are constexprs).
CASES = [{"HEAD_DIM": d, "CAUSAL": c} for d in (64, 128) for c in (False, True)]
#: Tiles and launch options per backend and head dim (the tutorial's classic choices).
TILES = {("cuda", 64): {"BM": 128, "BN": 64, "num_warps": 4, "num_stages": 3},
         ("cuda", 128): {"BM": 128, "BN": 64, "num_warps": 8, "num_stages": 3},
         ("hip", 64): {"BM": 128, "BN": 64, "num_warps": 4, "num_stages": 1},
         ("hip", 128): {"BM": 128, "BN": 64, "num_warps": 8, "num_stages": 1}}
#: Speed of the hybrid kernel relative to pure Triton.
GOALS = {"triton": 1.0}


@gluon.jit
def store_output(o_ptrs_base, acc, l_i, offs_row, HEAD_DIM: gl.constexpr, BM: gl.constexpr, L: gl.constexpr,
                 FROM_ACC: gl.constexpr):
    """O = acc / l (per row), stored as fp16 rows from the explicit layout ``L``, or (``FROM_ACC``,
    on AMD, as Triton stores there) from the accumulator's own MFMA layout."""
    l_i = gl.convert_layout(l_i, gl.SliceLayout(1, acc.type.layout))
    o = (acc / l_i[:, None]).to(gl.float16)
    if not FROM_ACC:
        o = gl.convert_layout(o, L)
    S: gl.constexpr = o.type.layout
    rows = offs_row + gl.arange(0, BM, layout=gl.SliceLayout(1, S))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, S))
    gl.store(o_ptrs_base + rows[:, None] * HEAD_DIM + cols[None, :], o)


@triton.jit
def store_output_triton(o_ptrs_base, acc, l_i, offs_row, HEAD_DIM: tl.constexpr, BM: tl.constexpr):
    """The epilogue before the port."""
    rows = offs_row + tl.arange(0, BM)
    cols = tl.arange(0, HEAD_DIM)
    tl.store(o_ptrs_base + rows[:, None] * HEAD_DIM + cols[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def softmax_update(qk, m_i, l_i, qk_scale):
    """One online-softmax step on a score tile: new row maxima, probabilities (base 2), the
    rescale factor of what was accumulated so far, new row sums."""
    m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
    alpha = tl.math.exp2(m_i - m_ij)
    return p, alpha, m_ij, l_i * alpha + tl.sum(p, 1)


@triton.jit
def kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, offs_n, qk_scale, lo, hi, HEAD_DIM: tl.constexpr,
            BN: tl.constexpr, MASK: tl.constexpr):
    for start_n in range(lo, hi, BN):
        qk = tl.dot(q, tl.load(k_ptrs + start_n * HEAD_DIM))
        if MASK:   # a diagonal block of the causal mask
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, -1.0e6)
        p, alpha, m_i, l_i = softmax_update(qk, m_i, l_i, qk_scale)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), tl.load(v_ptrs + start_n * HEAD_DIM), acc)
    return acc, m_i, l_i


@triton.jit
def attention_loop(Q, K, V, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   CAUSAL: tl.constexpr):
    """One BM-row block of one (batch, head) of contiguous (Z, H, N_CTX, HEAD_DIM) tensors, up to
    the epilogue: the unnormalized output, the row sums, and where the block starts."""
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    k_ptrs = K + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None]   # K^T tile
    v_ptrs = V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504   # 1/ln(2): exp2 in the update
    if CAUSAL:   # blocks left of the diagonal unmasked, then the diagonal ones masked
        acc, m_i, l_i = kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, offs_n, qk_scale, 0, start_m * BM, HEAD_DIM,
                                BN, False)
        acc, m_i, l_i = kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, offs_n, qk_scale, start_m * BM,
                                (start_m + 1) * BM, HEAD_DIM, BN, True)
    else:
        acc, m_i, l_i = kv_loop(acc, m_i, l_i, q, k_ptrs, v_ptrs, offs_m, offs_n, qk_scale, 0, N_CTX, HEAD_DIM, BN,
                                False)
    return acc, l_i, base, start_m * BM


@hybrid.jit
@triton.jit
def attention_kernel(Q, K, V, O, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     CAUSAL: tl.constexpr, L: tl.constexpr, FROM_ACC: tl.constexpr):
    acc, l_i, base, row = attention_loop(Q, K, V, sm_scale, N_CTX, HEAD_DIM, BM, BN, CAUSAL)
    store_output(O + base, acc, l_i, row, HEAD_DIM, BM, L, FROM_ACC)


@triton.jit
def attention_triton(Q, K, V, O, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     CAUSAL: tl.constexpr):
    """The kernel before the port: all Triton."""
    acc, l_i, base, row = attention_loop(Q, K, V, sm_scale, N_CTX, HEAD_DIM, BM, BN, CAUSAL)
    store_output_triton(O + base, acc, l_i, row, HEAD_DIM, BM)


SIGNATURE = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "sm_scale": "fp32", "N_CTX": "i32"}
#: Integer arguments the benchmark launch specializes as multiples of 16 (the static builds are of that).
DIVISIBLE = ("N_CTX", )


def config(target: str, HEAD_DIM: int = 64) -> dict:
    return TILES[TARGETS[target].backend, HEAD_DIM]


def tiles(target: str, HEAD_DIM: int = 64, CAUSAL: bool = False) -> dict:
    """The constexprs of the pure-Triton kernel."""
    c = config(target, HEAD_DIM)
    return {"HEAD_DIM": HEAD_DIM, "BM": c["BM"], "BN": c["BN"], "CAUSAL": CAUSAL}


def constexprs(target: str, HEAD_DIM: int = 64, CAUSAL: bool = False) -> dict:
    layout = row_layout(target, config(target, HEAD_DIM)["num_warps"], HEAD_DIM, vec=8)   # 8 fp16 = 16 bytes
    return {**tiles(target, HEAD_DIM, CAUSAL), "L": layout, "FROM_ACC": stores_from_dot_layout(target)}


def options(target: str, HEAD_DIM: int = 64) -> dict:
    return {k: v for k, v in config(target, HEAD_DIM).items() if k.startswith("num_")}


def build(target: str, HEAD_DIM: int = 64, CAUSAL: bool = False) -> hybrid.FusedBinary:
    return hybrid.compile(attention_kernel, SIGNATURE, constexprs(target, HEAD_DIM, CAUSAL), target=target,
                          divisible=DIVISIBLE, **options(target, HEAD_DIM))


def build_triton(target: str, HEAD_DIM: int = 64, CAUSAL: bool = False):
    return compile_pure(attention_triton, SIGNATURE, tiles(target, HEAD_DIM, CAUSAL), target,
                        divisible=DIVISIBLE, **options(target, HEAD_DIM))


#: (batch, heads, sequence length) of the GPU correctness check and of the benchmark (the head dim
#: and causality come from the case); the check's bound (fp16 output).
TOLERANCE = 1e-2
CHECK_SIZE, BENCH_SIZE = (2, 3, 256), (4, 32, 4096)


def problem(Z: int, H: int, N_CTX: int, HEAD_DIM: int = 64, CAUSAL: bool = False, device: str = "cuda") -> dict:
    """Fresh random fp16 Q, K, V on the GPU and a NaN-poisoned output."""
    import torch
    q, k, v = (torch.randn(Z, H, N_CTX, HEAD_DIM, device=device, dtype=torch.float16) for _ in range(3))
    return {"q": q, "k": k, "v": v, "o": torch.full_like(q, float("nan")), "causal": CAUSAL,
            "sm_scale": 1.0 / math.sqrt(HEAD_DIM)}


def work(Z: int, H: int, N_CTX: int, HEAD_DIM: int = 64, CAUSAL: bool = False) -> tuple[float, str]:
    """Two matrix products per (batch, head); half of them under a causal mask."""
    return 4 * Z * H * N_CTX * N_CTX * HEAD_DIM / (2 if CAUSAL else 1), "FLOP"


def run(variant: str, p: dict, target: str):
    """One launch of ``variant`` (``hybrid``, ``triton`` or ``torch``); returns the output."""
    import torch
    q, k, v, o = p["q"], p["k"], p["v"], p["o"]
    if variant == "torch":
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=p["causal"], scale=p["sm_scale"])
    Z, H, N_CTX, HEAD_DIM = q.shape
    hybrid_variant = variant == "hybrid"
    consts = (constexprs if hybrid_variant else tiles)(target, HEAD_DIM, p["causal"])
    assert N_CTX % consts["BM"] == 0 and all(t.is_contiguous() for t in (q, k, v, o))
    grid = (N_CTX // consts["BM"], Z * H)
    kernel = attention_kernel if hybrid_variant else attention_triton
    kernel[grid](q, k, v, o, p["sm_scale"], N_CTX, **consts, **options(target, HEAD_DIM))
    return o


def error(out, p: dict) -> float:
    """max |out - softmax(q k^T scale) v| against a float32 reference, one batch element at a time."""
    import torch
    worst = 0.0
    for z in range(p["q"].shape[0]):
        q, k, v = (p[name][z].float() for name in ("q", "k", "v"))
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=p["causal"], scale=p["sm_scale"])
        worst = max(worst, (out[z].float() - ref).abs().max().item())
    return worst


if __name__ == "__main__":
    from examples.run import main
    raise SystemExit(main(__name__))
