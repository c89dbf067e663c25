"""Axis hints: what Triton may know of a host tensor a Triton region takes (``interop/axis_hints``).

The rules are checked for soundness on real integer tensors (every fact they claim holds of the
values), and end to end: a Gluon host's pointer tensors passed into a Triton loop pipeline as
they do in the all-Triton kernel.
"""
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from examples.layouts import compile_pure, vector_layout

from interop.lowering import axis_hints
from interop.lowering.axis_hints import AxisFacts
from interop.instrumentation.resources import instructions

pytestmark = pytest.mark.version

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def _exact(values: np.ndarray) -> AxisFacts:
    """The strongest facts of ``values`` (powers of two, as Triton's analysis keeps them)."""
    contiguity, divisibility, constancy = [], [], []
    for d in range(values.ndim):
        n = values.shape[d]
        moved = np.moveaxis(values, d, -1).reshape(-1, n)
        c = max(p for p in (2 ** k for k in range(n.bit_length())) if p <= n and n % p == 0 and all(
            np.array_equal(row[i:i + p], row[i] + np.arange(p)) for row in moved for i in range(0, n, p)))
        k = max(p for p in (2 ** k for k in range(n.bit_length())) if p <= n and n % p == 0 and all(
            (row[i:i + p] == row[i]).all() for row in moved for i in range(0, n, p)))
        starts = moved[:, ::c].ravel()
        div = axis_hints.highest_pow2_divisor(int(np.bitwise_or.reduce(np.abs(starts).astype(np.int64))))
        contiguity.append(c)
        divisibility.append(div)
        constancy.append(k)
    flat = values.ravel()
    constant = int(flat[0]) if (flat == flat[0]).all() else None
    return AxisFacts(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


def _holds(facts: AxisFacts, values: np.ndarray) -> bool:
    exact = _exact(values)
    return (all(e % f == 0 for e, f in zip(exact.contiguity, facts.contiguity))
            and all(e % f == 0 for e, f in zip(exact.divisibility, facts.divisibility))
            and all(e % f == 0 for e, f in zip(exact.constancy, facts.constancy))
            and (facts.constant is None or facts.constant == exact.constant))


def _samples(rng: random.Random, shape: tuple) -> np.ndarray:
    """A tensor of one of the shapes address arithmetic makes: a range along one axis (strided
    or not), a constant, or arbitrary values."""
    kind = rng.choice(["range", "const", "scaled", "random"])
    axis = rng.randrange(len(shape))
    index = np.indices(shape)[axis]
    if kind == "range":
        return index + rng.choice([0, 1, 16, 64, 3])
    if kind == "const":
        return np.full(shape, rng.choice([0, 1, 2, 16, 48, 7]))
    if kind == "scaled":
        return index * rng.choice([1, 2, 16, 64]) + rng.choice([0, 8, 32])
    return np.array([rng.randrange(1000) for _ in range(math.prod(shape))]).reshape(shape)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_rules_claim_only_what_holds(seed):
    rng = random.Random(seed)
    for _ in range(150):
        shape = rng.choice([(8, ), (4, 8), (8, 4), (16, 16)])
        a, b = _samples(rng, shape), _samples(rng, shape)
        fa, fb = _exact(a), _exact(b)
        assert _holds(axis_hints._add(fa, fb, 1, True), a + b), (a, b)
        assert _holds(axis_hints._mul(fa, fb), a * b), (a, b)
        for axis in range(len(shape) + 1):
            assert _holds(axis_hints._expand_dims(fa, axis), np.expand_dims(a, axis)), (a, axis)


def test_pointer_offsets_count_in_bytes():
    """``K + offs_d[:, None]`` on fp16: a 16-byte aligned base plus element offsets contiguous
    along dim 0: runs of 64 pointers start 16-byte aligned; along dim 1 each pointer is its own
    run, of which only 2-byte alignment is known."""
    base = AxisFacts((1, 1), (16, 16), (64, 64))
    offsets = AxisFacts((64, 1), (1 << 30, 1), (1, 64))
    facts = axis_hints._add(base, offsets, 2, False)
    assert facts == AxisFacts((64, 1), (16, 2), (1, 64))


def test_a_sum_that_shortens_runs_keeps_no_divisibility_it_cannot_prove():
    """[16, 17, 18, 19] + [0, 16, 32, 48]: Triton's add rule would keep divisibility 16 for
    runs of length 1; the element 33 is not divisible by 16."""
    lhs = AxisFacts((4, ), (16, ), (1, ))
    rhs = AxisFacts((1, ), (16, ), (1, ))
    facts = axis_hints._add(lhs, rhs, 1, True)
    assert facts.contiguity == (1, ) and facts.divisibility == (1, )
    assert _holds(facts, np.array([16, 17, 18, 19]) + np.array([0, 16, 32, 48]))


def test_attributes_are_written_per_dimension_and_only_where_known():
    assert AxisFacts.unknown(2).attributes() == ""
    text = AxisFacts((64, 1), (16, 2), (1, 1)).attributes()
    assert text == ("{tt.contiguity = dense<[64, 1]> : tensor<2xi32>, "
                    "tt.divisibility = dense<[16, 2]> : tensor<2xi32>}")


def test_signature_surgery_places_each_attribute_on_its_argument():
    text = ("module {\n  tt.func private @f(%arg0: f32 loc(unknown), %arg1: tensor<4x8x!tt.ptr<f16>, "
            "#ttg.slice<{dim = 1, parent = #blocked}>> loc(unknown)) attributes {noinline = true} {\n  }\n}")
    out = axis_hints.with_argument_attributes(text, "f", {1: "{tt.contiguity = 8 : i32}"})
    assert ("%arg1: tensor<4x8x!tt.ptr<f16>, #ttg.slice<{dim = 1, parent = #blocked}>> "
            "{tt.contiguity = 8 : i32} loc(unknown)) attributes") in out
    assert "%arg0: f32 loc(unknown)," in out


@pytest.mark.slow
@pytest.mark.parametrize("target", ["sm80", "sm90a"])
def test_host_built_pointers_pipeline_in_the_region_as_in_all_triton(target):
    """attention's KV loop as a Triton region in a Gluon host: the K/V pointer tensors come from
    the host, and with their hints the region's loads are pipelined like the all-Triton
    kernel's (same async copies, same shared memory), where before they were scalar loads."""
    import parity_ports

    builds = parity_ports._attention(target)
    hybrid, triton = builds["hybrid"], builds["triton"]
    copies = [b.asm["ttgir"].count("ttg.async_copy_global_to_local") for b in (hybrid, triton)]
    assert copies[0] == copies[1] > 0
    assert hybrid.metadata.shared == triton.metadata.shared


@triton.jit
def load_scaled(ptrs, mask, s):
    return tl.load(ptrs, mask=mask) * s


@hybrid.jit
@gluon.jit
def pointer_host(x_ptr, y_ptr, n, s, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    mask = offs < n
    gl.store(y_ptr + offs, load_scaled(x_ptr + offs, mask, s), mask=mask)


@triton.jit
def pointer_triton(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, load_scaled(x_ptr + offs, mask, s), mask=mask)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_helper_loading_from_host_pointers_vectorizes_as_in_all_triton(target):
    """A 1-D pointer tensor from the host: the region's load is coalesced as Triton's own (so its
    result comes back in the host's 4-per-thread layout, where it used to come back 1 per
    thread and fail to meet the store), and the machine code is the all-Triton kernel's."""
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "s": "fp32"}
    fb = hybrid.compile(pointer_host, sig, {"BLOCK": 1024, "L": vector_layout(target, 4)}, target, num_warps=4)
    pure = compile_pure(pointer_triton, sig, {"BLOCK": 1024}, target, 4)
    assert sum(b.conversions for b in fb.boundaries) == 0
    assert instructions(fb.asm) == instructions(pure.asm)
