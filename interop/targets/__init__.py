"""The GPU targets triton-hybrid builds for, by the names kernel authors use: a target (``sm90a``)
or the GPU it runs on (``H100``, ``MI300X``), resolved here for every entry point (``hybrid.compile``,
the interpreter, ``hybrid build --target``)."""
from __future__ import annotations

import re

from triton.backends.compiler import GPUTarget

TARGETS: dict[str, GPUTarget] = {
    "sm80": GPUTarget("cuda", 80, 32),
    "sm90a": GPUTarget("cuda", 90, 32),
    "sm100a": GPUTarget("cuda", 100, 32),
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
}

#: GPU models -> the target whose binaries run on them. Only exact fits: an sm90a or sm100a binary
#: runs on its one architecture (a B300, sm_103, is not a B200), an AMD binary on its one gfx.
GPUS: dict[str, str] = {
    "A100": "sm80", "A800": "sm80",
    "H100": "sm90a", "H200": "sm90a", "H800": "sm90a", "GH200": "sm90a",
    "B200": "sm100a", "GB200": "sm100a",
    "MI300X": "gfx942", "MI300A": "gfx942", "MI325X": "gfx942",
    "MI350X": "gfx950", "MI355X": "gfx950",
}

#: words around a model in the names vendors and drivers print (``NVIDIA H100 80GB HBM3``,
#: ``AMD Instinct MI300X``), which say nothing about the architecture
_VENDOR = {"nvidia", "amd", "instinct", "tesla"}
_VARIANT = re.compile(r"\d+gb|hbm\d*e?|sxm\d*|pcie|nvl\d*|oam")
_BY_KEY = {**{name: name for name in TARGETS}, **{gpu.lower(): target for gpu, target in GPUS.items()}}


def canonical(name: str) -> str | None:
    """The target name for a target or GPU name, in any case and spelling (``SM90A``, ``sm_90a``,
    ``h100``, ``nvidia-h100``, ``NVIDIA H100 80GB HBM3``); None for a name that fits no target."""
    if not isinstance(name, str):
        return None
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in _VENDOR]
    if not words:
        return None
    joined = "".join(words)
    if joined in _BY_KEY:
        return _BY_KEY[joined]
    model, *variant = words
    if model.upper() in GPUS and all(_VARIANT.fullmatch(w) for w in variant):
        return GPUS[model.upper()]
    return None


def resolve(target: str | GPUTarget) -> GPUTarget:
    if isinstance(target, GPUTarget):
        return target
    name = canonical(target)
    if name is None:
        raise ValueError(unknown(str(target)))
    return TARGETS[name]


def unknown(name: str) -> str:
    """Why ``name`` is no target, and what is."""
    return (f"unknown target {name!r}{suggestion(name)}; expected one of {', '.join(TARGETS)}, a GPU name "
            f"({', '.join(GPUS)}; any case) or a GPUTarget")


def suggestion(name: str) -> str:
    """`` (did you mean ...?)`` naming the targets and GPUs whose name starts as ``name``'s does, up
    to the end of its number (``sm90`` -> ``sm90a``, ``MI300`` -> ``MI300X``), or nothing: never a
    near name of another architecture (``gfx90a`` is no ``gfx950``, an ``MI250X`` no ``MI350X``)."""
    stem = _stem(name)
    close = [repr(t) for t in TARGETS if _stem(t) == stem] + [f"{g!r} ({t})" for g, t in GPUS.items() if _stem(g) == stem]
    return f" (did you mean {' or '.join(close)}?)" if stem and close else ""


def _stem(name: str) -> str | None:
    found = re.match(r"[a-z]*\d+", "".join(re.split(r"[^a-z0-9]+", name.lower())))
    return found.group(0) if found else None


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
