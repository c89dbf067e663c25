"""The in-process caches of the compile path, cleared together (a cold compile to measure, a test).

Each cache is keyed by everything its result depends on, so none needs clearing to stay correct.
"""
from __future__ import annotations

from typing import Callable

_clearers: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> None:
    _clearers.append(clear)


def clear() -> None:
    """Empty every registered in-process cache (on-disk caches are left as they are)."""
    for clear_one in _clearers:
        clear_one()
