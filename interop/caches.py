"""The caches of the compile path: the in-process ones, cleared together (a cold compile to
measure, a test), and where the on-disk ones live: one root for both (``regions/`` for lowered
regions, ``jobs/`` for built kernels), so ``--cache-dir`` moves them together.

Each cache is keyed by everything its result depends on, so none needs clearing to stay correct.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from pathlib import Path
from typing import Callable, Iterator


def sources_digest(folders) -> str:
    """A sha256 over the ``*.py`` files under ``folders``, by their names there and contents."""
    digest = hashlib.sha256()
    for folder in map(Path, folders):
        for path in sorted(folder.rglob("*.py")):
            digest.update(f"{folder.name}/{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


#: Part of every cache key: a change to how regions are lowered or stitched invalidates what was
#: built with the old code (this package's own source, hashed).
STITCH_VERSION = sources_digest([Path(__file__).parent])[:16]

_clearers: list[Callable[[], None]] = []
_root: contextvars.ContextVar[Path | None] = contextvars.ContextVar("hybrid_cache_root", default=None)


def register(clear: Callable[[], None]) -> None:
    _clearers.append(clear)


def default_root() -> Path:
    """The on-disk caches' folder: the one ``using_root`` set, else ``$HYBRID_CACHE_DIR``, else
    ``~/.cache/triton-hybrid``."""
    return _root.get() or Path(os.environ.get("HYBRID_CACHE_DIR") or Path.home() / ".cache" / "triton-hybrid")


@contextlib.contextmanager
def using_root(root: str | os.PathLike | None) -> Iterator[None]:
    """Within the block (this thread or task), the on-disk caches live under ``root`` (None: as
    before). A build passes its job cache's root to each worker this way."""
    token = _root.set(Path(root) if root is not None else _root.get())
    try:
        yield
    finally:
        _root.reset(token)


def clear() -> None:
    """Empty every registered in-process cache (on-disk caches are left as they are)."""
    for clear_one in _clearers:
        clear_one()
