"""A call's arguments as the IR sees them: bound, normalized, flattened to runtime leaves.

Constexprs are not leaves; tuples are flattened in order. Both directions of a mixed call
(Gluon host -> Triton region, Triton host -> Gluon region) pass exactly these leaves.
"""
from __future__ import annotations

import inspect

from ..triton.language import core as tl


def bind(fn, args, kwargs) -> list:
    bound = inspect.signature(fn.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return [normalize(bound.arguments[name]) for name in fn.arg_names]


def normalize(value):
    if isinstance(value, (tuple, tl.tuple)):
        return tl.tuple([normalize(v) for v in value])
    if isinstance(value, tl.base_value):
        return value
    return tl.constexpr(value)


def leaves(args, names) -> list[tuple[str, object]]:
    """(name, value) of the runtime (non-constexpr) values among ``args``, in IR flattening order;
    a tensor descriptor is its handle, then its shape and strides (``name.shape[i]``, ...)."""
    out = []
    for name, arg in zip(names, args):
        if isinstance(arg, tl.tuple):
            out.extend(leaves(arg.values, [f"{name}[{i}]" for i in range(len(arg.values))]))
        elif is_descriptor(arg.type):
            out.append((name, arg))
            out.extend((f"{name}.{part}[{i}]", value) for part in ("shape", "strides")
                       for i, value in enumerate(getattr(arg, part)))
        elif not isinstance(arg, tl.constexpr):
            out.append((name, arg))
    return out


def leaf_types(types: list) -> list:
    """The Triton types of the runtime (non-constexpr) leaves, in IR flattening order."""
    out: list = []
    for ty in types:
        if isinstance(ty, tl.tuple_type):
            out.extend(leaf_types(ty.types))
        elif is_descriptor(ty):
            out.extend([ty, *ty.shape_type.types, *ty.strides_type.types])
        elif not isinstance(ty, tl.constexpr_type) and ty is not tl.constexpr:
            out.append(ty)
    return out


def with_leaf_types(types: list, new_leaves) -> list:
    """``types`` with each runtime leaf replaced by the next of ``new_leaves`` (same order; a
    descriptor by the leaf of its handle)."""
    out = []
    for ty in types:
        if isinstance(ty, tl.tuple_type):
            out.append(tl.tuple_type(with_leaf_types(ty.types, new_leaves), ty.fields))
        elif isinstance(ty, tl.constexpr_type) or ty is tl.constexpr:
            out.append(ty)
        elif is_descriptor(ty):   # its handle's leaf; its shape's and strides' leaves are in that type
            out.append(next(new_leaves))
            for _ in range(len(ty.shape_type.types) + len(ty.strides_type.types)):
                next(new_leaves)
        else:
            out.append(next(new_leaves))
    return out


def is_descriptor(ty) -> bool:
    """A tiled tensor descriptor's type (Triton's, or Gluon's TMA descriptor): an argument of
    1 + 2 x rank IR values (its handle, shape and strides)."""
    return hasattr(ty, "block_type") and hasattr(ty, "shape_type") and hasattr(ty, "strides_type")
