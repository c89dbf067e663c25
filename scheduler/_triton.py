"""Triton internals the scheduler relies on, in one marked place.

Everything here reaches below Triton's public API; it has the same shape in 3.6 and 3.9 but
belongs in ``interop/compat.py`` (the project's one version-aware module) once that is merged.
"""
from __future__ import annotations

import functools
from pathlib import Path

from hybrid.targets import TARGETS


@functools.lru_cache(maxsize=None)
def _backend_hash(target: str) -> str:
    from triton.compiler.compiler import make_backend
    return make_backend(TARGETS[target]).hash()


def compiler_fingerprint(target: str) -> str:
    """What changes a binary besides sources and options, as Triton's own cache key sees it: the
    backend toolchain (ptxas / LLVM versions) and the cache-invalidating environment variables."""
    from triton._C.libtriton import get_cache_invalidating_env_vars
    return f"{_backend_hash(target)}|{sorted(get_cache_invalidating_env_vars().items())}"


def nvidia_tool(name: str) -> Path | None:
    """A CUDA tool shipped inside the Triton wheel (``cuobjdump``), if present."""
    import triton.backends.nvidia
    path = Path(triton.backends.nvidia.__file__).parent / "bin" / name
    return path if path.is_file() else None
