"""Kernels whose launch records and cache keys the artifact tests check.

``k_mixed``'s parameters are not in alphabetical order and differ in width (``d`` is i64, ``c``
i32), so a record that loses their order packs a launch wrongly. ``k_apply`` takes a JIT
function as a constexpr value (``OP``): a key must see that function's source and what it calls.
"""
import triton
import triton.language as tl

import hybrid

SIGNATURE = {"a_ptr": "*fp32", "d": "i64", "c": "i32", "x_ptr": "*fp32", "n": "i32"}


@triton.jit
def h_offset(x):
    return x + 1.0


@triton.jit
def h_op(x):
    return h_offset(x) * 2.0


def constexprs(target: str) -> dict:
    return {"BLOCK": 64, "OP": h_op}


@hybrid.jit
@triton.jit
def k_mixed(a_ptr, d, c, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(a_ptr + offs, (d + c).to(tl.float32), mask=offs < c)


@hybrid.jit
@triton.jit
def k_apply(x_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, OP(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
