"""The one exception of ``hybrid port``, and where things are, as ``file:line``."""
from __future__ import annotations

import inspect
import os


class PortError(ValueError):
    """A port that cannot be started: says what, where (``file:line``) and what to do instead.
    Raised before anything is written, so there is never a half-right port on disk."""


def where(fn, line: int | None = None) -> str:
    """``file:line`` of a JIT (or plain) function: its ``def`` line, or line ``line`` of its source
    (1 = the first line, decorators included); relative to the working directory when below it."""
    py = getattr(fn, "fn", fn)
    try:
        lines, first = inspect.getsourcelines(py)
    except (OSError, TypeError):
        lines, first = [], getattr(getattr(py, "__code__", None), "co_firstlineno", 0)
    if line is None:
        line = next((i + 1 for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 1)
    return f"{shown(getattr(getattr(py, '__code__', None), 'co_filename', '?'))}:{first + line - 1}"


def shown(path) -> str:
    """``path`` relative to the working directory when below it, else as it is."""
    path = str(path)
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return path if rel.startswith("..") else rel
