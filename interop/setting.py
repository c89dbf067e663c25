"""A build setting that holds for a block of code (``with setting.using(value):``).

Compiles run inside upstream calls the project does not control (``triton.compile``, the JIT's
launch), so settings such as the boundary mode reach the session through a context variable,
checked against the values it may take when a block sets it.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class Setting(Generic[T]):
    def __init__(self, name: str, choices: tuple[T, ...], default: T):
        self.name, self.choices = name, choices
        self._value = contextvars.ContextVar(f"hybrid_{name}", default=default)

    def get(self) -> T:
        return self._value.get()

    @contextlib.contextmanager
    def using(self, value: T) -> Iterator[None]:
        if value not in self.choices:
            raise ValueError(f"{self.name}={value!r}: expected one of {', '.join(map(str, self.choices))}")
        token = self._value.set(value)
        try:
            yield
        finally:
            self._value.reset(token)
