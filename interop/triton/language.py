"""Triton's language core and Gluon's layout classes, as the compiler and interpreter see them
(below the public ``tl``/``gl`` namespaces)."""
from triton.experimental.gluon import language as _gl
from triton.experimental.gluon.language._layouts import DistributedLayout, DistributedLinearLayout, SharedLayout
from triton.experimental.gluon.language._semantic import GluonSemantic
from triton.language import core
from triton.language.core import is_builtin
from triton.language.semantic import TritonSemantic

#: the method by which a Gluon layout builds its IR attribute (the interpreter wraps it)
LAYOUT_TO_IR = "_to_ir"
#: Gluon's core module, whose builtins the interpreter patches with Triton's
gluon_core = _gl._core


def layout_to_ir(layout, builder):
    """``layout``'s IR attribute, built with ``builder``."""
    return getattr(layout, LAYOUT_TO_IR)(builder)


def unwrap_constexpr(value):
    """``value``, or the value a ``constexpr`` holds."""
    return core._unwrap_if_constexpr(value)


def normalize_tuple(value):
    """A Python list or tuple as Triton's tuple value."""
    return core._normalize_tuple(value)


__all__ = ["DistributedLayout", "DistributedLinearLayout", "GluonSemantic", "LAYOUT_TO_IR", "SharedLayout",
           "TritonSemantic", "core", "gluon_core", "is_builtin", "layout_to_ir", "normalize_tuple",
           "unwrap_constexpr"]
