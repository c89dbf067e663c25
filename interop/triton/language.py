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


#: Triton's ``@aggregate`` class decorator and the type of its values (a ``hybrid.PointerDescriptor``)
aggregate = core._aggregate
AggregateType = core._aggregate_type


def layout_to_ir(layout, builder):
    """``layout``'s IR attribute, built with ``builder``."""
    return getattr(layout, LAYOUT_TO_IR)(builder)


def unwrap_constexpr(value):
    """``value``, or the value a ``constexpr`` holds."""
    return core._unwrap_if_constexpr(value)


def normalize_tuple(value):
    """A Python list or tuple as Triton's tuple value."""
    return core._normalize_tuple(value)


class HostDescriptorType(core.tensor_descriptor_type):
    """A Gluon host's tensor descriptor as a Triton region sees it: Triton's descriptor type (so
    ``desc.load``/``desc.store`` are Triton's) whose IR type is the host's, its shared layout kept
    (a region lowered for the host's descriptor uses that layout, as the host built it)."""

    def __init__(self, host_type, ir_type):
        super().__init__(host_type.block_type, host_type.shape_type, host_type.strides_type)
        self.host_type, self.ir_type = host_type, ir_type

    def _flatten_ir_types(self, builder, out) -> None:
        out.append(self.ir_type)
        self.shape_type._flatten_ir_types(builder, out)
        self.strides_type._flatten_ir_types(builder, out)

    def __str__(self) -> str:
        return str(self.host_type)

    def mangle(self) -> str:
        return self.host_type.mangle()


__all__ = ["AggregateType", "DistributedLayout", "HostDescriptorType", "DistributedLinearLayout", "GluonSemantic", "LAYOUT_TO_IR", "SharedLayout",
           "TritonSemantic", "aggregate", "core", "gluon_core", "is_builtin", "layout_to_ir", "normalize_tuple",
           "unwrap_constexpr"]
