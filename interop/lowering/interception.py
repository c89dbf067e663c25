"""Cross-language calls intercepted during code generation, for the compile that asked for them.

Triton's ``ast_to_ttir`` and ``CodeGenerator.call_JitFunction`` create every function's
generator as the module global ``code_generator.CodeGenerator``, so one subclass installed
there sees every function of a kernel, however deeply nested. ``HybridCodeGenerator`` is
installed once for the process (``compat.install_code_generator``). Each instance takes the
compile it serves from a ContextVar when it is created (``generating``); with none set it is
exactly upstream's generator. A plain Triton or Gluon compile on another thread (Triton's
async compile mode takes any executor) therefore never meets a hybrid compile.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass
from typing import Iterator

from triton.runtime import JITFunction

from . import guarded_builder
from ..targets import arch
from ..errors import nested_region
from ..triton import compat


@dataclass(frozen=True)
class Interception:
    """Where a generator sends cross-language calls: the Triton and Gluon regions of ``compile``
    (a ``compile_context.CompileContext``). ``probing``: the Gluon function being generated is
    built only to learn its result types, so its Triton calls are typed, not stitched (as in a
    loop's dry visit)."""
    compile: object
    probing: bool = False
    within: str | None = None   # the Triton region whose body is generated ("'t_scale' called at file:line")


_current: contextvars.ContextVar[Interception | None] = contextvars.ContextVar("hybrid_interception", default=None)


@contextlib.contextmanager
def generating(compile_context, probing: bool = False) -> Iterator[None]:
    """Code generators created in this block (in this thread or context) report to ``compile_context``."""
    token = _current.set(Interception(compile_context, probing))
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def inside_triton_region(description: str) -> Iterator[None]:
    """Code generators created in this block generate the body of the Triton region
    ``description``: a Gluon call there would nest regions, which stitching cannot do."""
    current = _current.get()
    token = _current.set(dataclasses.replace(current, within=description)) if current is not None else None
    try:
        yield
    finally:
        if token is not None:
            _current.reset(token)


def compile_of(generator):
    """The compile ``generator`` reports to, or None (an upstream compile, or no generator)."""
    interception = getattr(generator, "interception", None)
    return interception.compile if interception is not None else None


class HybridCodeGenerator(compat.upstream_code_generator()):
    """Upstream's generator; while a hybrid compile generates code, a call from Gluon code to a
    ``@triton.jit`` function becomes a Triton region and a call from Triton code to a
    ``@gluon.jit`` function a Gluon region. Calls within one language are upstream's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.interception = _current.get()
        if self.interception is None:
            return
        if self.is_kernel:
            self.interception.compile.host_module = self.module
        if self.is_gluon:
            guarded_builder.guard(self.builder)
            self._name_regions_in_mismatches()

    def _name_regions_in_mismatches(self) -> None:
        """A layout mismatch in the host's code that involves a Triton region's result names the
        region, its call site, both layouts and the conversion to write (``mismatch``)."""
        broadcast = self.semantic.broadcast_impl_value

        def broadcast_impl_value(lhs, rhs):
            try:
                return broadcast(lhs, rhs)
            except ValueError as exc:
                error = self.interception.compile.triton.mismatch(self, lhs, rhs, exc)
                if error is None:
                    raise
                raise error from exc

        self.semantic.broadcast_impl_value = broadcast_impl_value

    def call_Function(self, node, fn, args, kws):
        """A Gluon builtin the target lacks is a ``TargetError`` at its call, before any IR (``targets.arch``)."""
        if self.interception is not None:
            arch.check_builtin(fn, self.interception.compile.target,
                               lambda: f"{self.file_name}:{self.begin_line + node.lineno} in {self.jit_fn.__name__}")
            within = self.interception.within
            if within and not self.is_gluon and isinstance(fn, JITFunction) and fn.is_gluon():
                raise nested_region(fn.__name__, f"{self.file_name}:{self.begin_line + node.lineno}", within)
        return super().call_Function(node, fn, args, kws)

    def call_JitFunction(self, fn, args, kwargs, caller_context=None):
        interception = self.interception
        # triton.language's own helpers (reduce combiners, ...) serve both languages
        if interception is None or _is_library(fn) or self.is_gluon == fn.is_gluon():
            return super().call_JitFunction(fn, args, kwargs, caller_context=caller_context)
        if self.is_gluon:
            return interception.compile.triton.call(self, fn, args, kwargs, probing=interception.probing)
        return interception.compile.gluon.call(self, fn, args, kwargs)


def _is_library(fn) -> bool:
    return getattr(fn.fn, "__module__", "").startswith("triton.")


compat.install_code_generator(HybridCodeGenerator)
