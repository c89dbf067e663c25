"""The GPU targets triton-hybrid builds for, by the names kernel authors use."""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

TARGETS: dict[str, GPUTarget] = {
    "sm80": GPUTarget("cuda", 80, 32),
    "sm90a": GPUTarget("cuda", 90, 32),
    "sm100a": GPUTarget("cuda", 100, 32),
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
}


def resolve(target: str | GPUTarget) -> GPUTarget:
    if isinstance(target, GPUTarget):
        return target
    try:
        return TARGETS[target]
    except KeyError:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)} or a GPUTarget") from None


def name_of(target: GPUTarget) -> str:
    for name, known in TARGETS.items():
        if known == target:
            return name
    return f"{target.backend}:{target.arch}"

