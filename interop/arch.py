"""What a target has: architecture-specific ttg ops, and shared memory.

A Hopper op compiled for sm80 ends in an LLVM abort ("Cannot select: intrinsic ...") and an
NVIDIA op on AMD in a pass-manager failure; Gluon lets an author write either. Each Gluon
function is checked right after it is built, so the error names it and its call site. A kernel
over the target's shared memory only fails at launch upstream; ``hybrid.compile`` checks it
ahead of time, with what each region allocates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .movement import element_bits, tile_bytes

#: op-name prefix -> (backend, minimum NVIDIA compute capability or None, what it is)
_REQUIREMENTS = (
    ("ttng.warp_group_dot", "cuda", 90, "Hopper warpgroup MMA (wgmma)"),
    ("ttng.fence_async_shared", "cuda", 90, "the async-proxy fence"),
    ("ttng.async_tma", "cuda", 90, "a TMA copy"),
    ("ttng.tc_gen5", "cuda", 100, "a Blackwell tcgen05 op"),
    ("ttng.tmem", "cuda", 100, "Blackwell tensor memory"),
    ("ttg.warp_", "cuda", 90, "warp specialization (gl.warp_specialize)"),
    ("ttng.", "cuda", None, "an NVIDIA-only op"),
    ("amdgpu.", "hip", None, "an AMD-only op"),
    ("amdg.", "hip", None, "an AMD-only op"),
)


@dataclass(frozen=True)
class Misplaced:
    op: str
    needs: str


def misplaced_ops(module, target) -> list[Misplaced]:
    """Ops in ``module`` that ``target`` (a ``GPUTarget``) cannot run: the first op per missing feature."""
    found: dict[str, Misplaced] = {}

    def visit(op):
        needs = unmet(op.get_name(), target)
        if needs and needs not in found:
            found[needs] = Misplaced(op.get_name(), needs)

    module.walk(visit)
    return list(found.values())


def unmet(op_name: str, target) -> str | None:
    """What ``op_name`` needs that ``target`` lacks (``"a TMA copy (sm90+)"``), or None."""
    for prefix, backend, capability, what in _REQUIREMENTS:
        if not op_name.startswith(prefix):
            continue
        if target.backend != backend:
            return f"{what} ({backend} only)"
        if capability is not None and int(target.arch) < capability:
            return f"{what} (sm{capability}+)"
        return None
    return None


def describe(target) -> str:
    return f"{target.backend}:{target.arch}"


#: Shared memory (LDS) one CTA may use, by NVIDIA compute capability or AMD architecture.
_SHARED_LIMIT = {80: 166912, 86: 101376, 89: 101376, 90: 232448, 100: 232448, 120: 101376,
                 "gfx942": 65536, "gfx950": 163840}


def shared_memory_limit(target) -> int | None:
    return _SHARED_LIMIT.get(target.arch)


def allocated_shared_bytes(module) -> int:
    """Bytes of the shared-memory buffers ``module`` allocates explicitly (``ttg.local_alloc``)."""
    total = 0

    def visit(op):
        nonlocal total
        if op.get_name() == "ttg.local_alloc":
            total += _memdesc_bytes(str(op.get_result(0).get_type()))

    module.walk(visit)
    return total


def _memdesc_bytes(type_text: str) -> int:
    dims = re.match(r"!ttg\.memdesc<([^,>]+)", type_text).group(1).split("x")
    return tile_bytes([int(d) for d in dims[:-1]], element_bits(dims[-1]))
