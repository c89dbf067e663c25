"""A compile that lost a parse to CPython's ``ast`` race is run again.

CPython before 3.13 counts the depth of the ``ast`` tree it is building in one counter per
interpreter, not per thread, so two threads parsing at once can fail one of the parses with
``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905; thread-safe
from 3.13). Triton parses a kernel's source on every compile and a hybrid compile parses its
regions' too, so a hybrid compile beside any other compile on another thread can hit it. A parse
has no effect to undo: the compile is run again.
"""
from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

RACE = "AST constructor recursion depth mismatch"
ATTEMPTS = 3


def retrying(build: Callable[[], T]) -> T:
    """``build()``, run again where it failed only by losing that race (at most ``ATTEMPTS`` runs)."""
    for _ in range(ATTEMPTS - 1):
        try:
            return build()
        except SystemError as exc:
            if RACE not in str(exc):
                raise
    return build()
