"""Architecture-specific ttg ops, checked against the target before the backend sees them.

A Hopper op compiled for sm80 ends in an LLVM abort ("Cannot select: intrinsic ...") and an
NVIDIA op on AMD in a pass-manager failure; Gluon lets an author write either. Each Gluon
function is checked right after it is built, so the error names it and its call site.
"""
from __future__ import annotations

from dataclasses import dataclass

#: op-name prefix -> (backend, minimum NVIDIA compute capability or None, what it is)
_REQUIREMENTS = (
    ("ttng.warp_group_dot", "cuda", 90, "Hopper warpgroup MMA (wgmma)"),
    ("ttng.fence_async_shared", "cuda", 90, "the async-proxy fence"),
    ("ttng.async_tma", "cuda", 90, "a TMA copy"),
    ("ttng.tc_gen5", "cuda", 100, "a Blackwell tcgen05 op"),
    ("ttng.tmem", "cuda", 100, "Blackwell tensor memory"),
    ("ttng.", "cuda", None, "an NVIDIA-only op"),
    ("amdgpu.", "hip", None, "an AMD-only op"),
    ("amdg.", "hip", None, "an AMD-only op"),
)


@dataclass(frozen=True)
class Misplaced:
    op: str
    needs: str


def misplaced_ops(module, target) -> list[Misplaced]:
    """Ops in ``module`` that ``target`` (a ``GPUTarget``) cannot run, first occurrence each."""
    found: dict[str, Misplaced] = {}

    def visit(op):
        name = op.get_name()
        for prefix, backend, capability, what in _REQUIREMENTS:
            if not name.startswith(prefix):
                continue
            if target.backend != backend:
                found.setdefault(name, Misplaced(name, f"{what} ({backend} only)"))
            elif capability is not None and int(target.arch) < capability:
                found.setdefault(name, Misplaced(name, f"{what} (sm{capability}+)"))
            return

    module.walk(visit)
    return list(found.values())


def describe(target) -> str:
    return f"{target.backend}:{target.arch}"
