"""A copy of a module to try a rewrite on, or to measure, without touching the original."""
from __future__ import annotations

from typing import Callable

from ..triton.bindings import parse_module


def copy_module(module, context):
    """An independent copy of ``module`` in ``context``: printed and parsed back, since the bindings
    of Triton 3.6 to 3.9 clone neither a module nor an op (``parse_module`` keeps its attributes the
    ones Triton builds, so the copy's values fit the original's)."""
    return copier(module, context)()


def copier(module, context) -> Callable[[], object]:
    """Independent copies of ``module`` as it is now, printed once for all of them (trials of one
    module laid out several ways)."""
    text = str(module)
    return lambda: parse_module(text, context)
