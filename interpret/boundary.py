"""Values crossing between a Triton function and a Gluon function in the interpreter.

Compiled, a Triton region sees its tensors without layouts (its passes choose them), and a Gluon
region sees the layouts its host gave. Here the same types are made: Triton code gets plain
block types; Gluon code gets a ``RegionLayout`` for layouts only the compiler would know.
"""
from __future__ import annotations

from triton.experimental.gluon import language as gl
from triton.language import core as tl

from . import program as prog
from .layouts import RegionLayout


def into(language: str, value, origin: str):
    """``value`` as code of ``language`` sees it (recursing through tuples)."""
    if isinstance(value, tl.tuple):
        return tl.tuple([into(language, v, origin) for v in value.values])
    if isinstance(value, tuple):
        return tuple(into(language, v, origin) for v in value)
    if not isinstance(value, tl.tensor) or not isinstance(value.type, tl.block_type):
        if language == "triton" and isinstance(value, gl.shared_memory_descriptor):
            raise TypeError(f"a shared-memory descriptor cannot be passed into a Triton region ({origin}); "
                            f"load it into registers before the call")
        return value
    ty = value.type
    if language == "triton":
        return tl.tensor(value.handle, tl.block_type(ty.element_ty, ty.shape))
    layout = RegionLayout.for_value(origin, len(ty.shape), prog.program().warp_size, prog.current_frame().num_warps)
    return tl.tensor(value.handle, gl.distributed_type(ty.element_ty, ty.shape, layout))
