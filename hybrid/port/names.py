"""What the names in a JIT function's source refer to: the functions it calls, found by reading
its source against its module's globals (as Triton's own code generator resolves them)."""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from typing import Iterator

from triton.runtime import JITFunction, KernelInterface

from interop.triton.frontend import GluonJITFunction

from .errors import PortError, where


def source_tree(fn) -> ast.Module:
    """The AST of a JIT function's source, decorators included (line 1 = the first decorator)."""
    return ast.parse(textwrap.dedent(inspect.getsource(getattr(fn, "fn", fn))))


def resolve(node: ast.expr, namespace: dict):
    """The object a ``Name`` or ``a.b.c`` chain refers to in ``namespace`` (or builtins); None if unknown."""
    if isinstance(node, ast.Name):
        return namespace[node.id] if node.id in namespace else getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, namespace)
        return None if base is None else getattr(base, node.attr, None)
    return None


def references(fn) -> Iterator[tuple[ast.expr, object]]:
    """(node, object) for every name or attribute chain loaded in ``fn``'s body."""
    namespace = getattr(fn, "fn", fn).__globals__
    for node in ast.walk(source_tree(fn)):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            value = resolve(node, namespace)
            if value is not None:
                yield node, value


def jit_function(value):
    """The JIT function under ``@triton.autotune`` / ``@triton.heuristics`` wrappers (their ``.fn``),
    or ``value`` itself."""
    while isinstance(value, KernelInterface) and not isinstance(value, JITFunction):
        value = value.fn
    return value


def is_triton(fn) -> bool:
    """A ``@triton.jit`` function (a kernel or a helper), not a Gluon one."""
    return isinstance(fn, JITFunction) and not isinstance(fn, GluonJITFunction)


def is_library(fn) -> bool:
    """Part of Triton itself (``tl.sum``, ``tl.sigmoid``), as opposed to the user's code."""
    return getattr(fn, "fn", fn).__module__.split(".")[0] == "triton"


def jit_callees(fn) -> dict[str, JITFunction]:
    """The user's JIT functions (Triton or Gluon, not Triton's library) that ``fn`` refers to, by name."""
    return {value.fn.__name__: value for _, value in references(fn)
            if isinstance(value, JITFunction) and value is not fn and not is_library(value)}


def returns_value(fn) -> bool:
    """Whether a JIT function returns a value (a helper; a kernel returns nothing)."""
    return any(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(source_tree(fn)))


def qualified(fn) -> str:
    py = getattr(fn, "fn", fn)
    return f"{py.__module__}.{py.__name__}"


#: The defaults a Gluon function's source can repeat as written: ``repr`` spells them back.
LITERAL_DEFAULTS = (type(None), bool, int, float, str)


def parameters(fn, constexprs: set[str]) -> str:
    """``fn``'s parameters as a ``@gluon.jit`` function that stands in for it declares them: those in
    ``constexprs`` annotated ``gl.constexpr``, each default as ``fn`` has it, so that a call leaving
    one out still binds."""
    def declared(p) -> str:
        text = f"{p.name}: gl.constexpr" if p.name in constexprs else p.name
        if p.default is inspect.Parameter.empty:
            return text
        if type(p.default) not in LITERAL_DEFAULTS:
            raise PortError(f"{fn.__name__} ({where(fn)}): the default of its parameter {p.name} "
                            f"({p.default!r}) is not a Python literal a Gluon function can repeat; pass it "
                            f"in the call, or port this function by hand")
        return f"{text}={p.default!r}" if p.name not in constexprs else f"{text} = {p.default!r}"
    return ", ".join(declared(p) for p in fn.params)
