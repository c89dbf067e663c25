"""Values crossing between a Triton function and a Gluon function in the interpreter.

Compiled, a Triton region sees its tensors without layouts (its passes choose them), and a Gluon
region sees the layouts its host gave. Here the same types are made: Triton code gets plain
block types; Gluon code gets a ``RegionLayout`` for layouts only the compiler would know, or
what the function declared with ``@hybrid.takes`` (``declared``). A shared buffer a Gluon
function returns to Triton code is loaded, as the compiled boundary does.
"""
from __future__ import annotations

import inspect

from triton.experimental.gluon import language as gl
from triton.language import core as tl

from interop import handoff

from . import layouts
from . import program as prog
from .layouts import RegionLayout


def into(language: str, value, origin: str, semantic=None):
    """``value`` as code of ``language`` sees it (recursing through tuples); ``semantic`` (the
    Gluon one) loads a returned shared buffer."""
    if isinstance(value, tl.tuple):
        return tl.tuple([into(language, v, origin, semantic) for v in value.values])
    if isinstance(value, tuple):
        return tuple(into(language, v, origin, semantic) for v in value)
    if language == "triton" and isinstance(value, gl.shared_memory_descriptor):
        if semantic is None:
            raise TypeError(f"a shared-memory descriptor cannot be passed into a Triton region ({origin}); "
                            f"load it into registers before the call")
        value = semantic.shared_load(value, _region_layout(origin, len(value.type.shape)))
    if not isinstance(value, tl.tensor) or not isinstance(value.type, tl.block_type):
        return value
    ty = value.type
    if language == "triton":
        return tl.tensor(value.handle, tl.block_type(ty.element_ty, ty.shape))
    return tl.tensor(value.handle, gl.distributed_type(ty.element_ty, ty.shape, _region_layout(origin, len(ty.shape))))


def declared(fn, args: tuple, kwargs: dict, semantic) -> tuple[tuple, dict]:
    """The arguments of a Gluon function called from Triton code as its ``@hybrid.takes``
    declarations ask: in the declared layout (checked against the target), or stored into a
    new shared buffer of the declared shared layout."""
    if not handoff.declares(fn):   # most calls: nothing to bind
        return args, kwargs
    bound = inspect.signature(fn.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    wants = handoff.wants(fn, dict(bound.arguments))
    for name, want in wants.items():
        value = bound.arguments[name]
        ty = value.type
        if want.in_shared:
            bound.arguments[name] = semantic.allocate_shared(ty.element_ty, list(ty.shape), want.layout, value)
        else:
            layouts.check(want.layout, prog.program().warp_size, prog.current_frame().num_warps)
            bound.arguments[name] = tl.tensor(value.handle, want.gluon_type(ty))
    return bound.args, bound.kwargs


def _region_layout(origin: str, rank: int) -> RegionLayout:
    return RegionLayout.for_value(origin, rank, prog.program().warp_size, prog.current_frame().num_warps)
