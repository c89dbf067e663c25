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


def current_gpu_target() -> str | None:
    """The target name of the GPU torch sees here, or None (no GPU, or one no target fits)."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
    except Exception:
        return None
    if torch.version.hip:
        arch = torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
        return arch if arch in TARGETS else None
    return {(8, 0): "sm80", (9, 0): "sm90a", (10, 0): "sm100a"}.get((major, minor))
