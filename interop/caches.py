"""The caches of the compile path: the in-process ones, cleared together (a cold compile to
measure, a test), and where the on-disk ones live.

Each cache is keyed by everything its result depends on, so none needs clearing to stay correct.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

_clearers: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> None:
    _clearers.append(clear)


def default_root() -> Path:
    """The on-disk caches' folder: ``$HYBRID_CACHE_DIR``, else ``~/.cache/triton-hybrid``."""
    return Path(os.environ.get("HYBRID_CACHE_DIR") or Path.home() / ".cache" / "triton-hybrid")


def clear() -> None:
    """Empty every registered in-process cache (on-disk caches are left as they are)."""
    for clear_one in _clearers:
        clear_one()
