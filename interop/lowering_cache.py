"""Lowered Triton regions kept between call sites and between compiles, in memory and on disk.

A region's lowering depends on: the function's source and, transitively, the JIT functions it
calls (upstream's ``JITFunction.cache_key``, which covers their first lines too) and its file
(locations name it); the call's argument types, every constexpr value and, for each tensor, the
host's full type string (layout included); the scalar arguments' specialization; the backend
options; the target; the Triton release; and this project's own code (``source.STITCH_VERSION``).
The key is a sha256 over all of them. MLIR operations belong to one context, so an entry holds
the lowered module as text and is parsed back into the compile's own context through Triton's
bindings; it also holds the region's module after Triton's ``ttir`` stage (a Gluon host's
``asm["ttir"]``), and an entry written without it is a miss. On disk entries live under
``$HYBRID_CACHE_DIR`` (default ``~/.cache/triton-hybrid``) in ``regions/``, written atomically;
an entry that does not parse is ignored and rewritten.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from triton.runtime import JITFunction

from . import caches, timing
from .lower_triton import LoweredRegion, lowered_region
from .triton import compat
from .triton.bindings import parse_module
from .triton.language import core as tl


@dataclass(frozen=True)
class _Entry:
    text: str                  # the lowered module, printed with its locations
    ret_type: object           # the region's Triton-level return type
    leaf_is_tensor: tuple
    host_types: tuple          # the printed types of the tensor inputs (part of the key)
    ttir: str                  # the module after Triton's ttir stage (``LoweredRegion.ttir``)


_memory: dict[str, _Entry] = {}
caches.register(_memory.clear)


def key(fn, args: list, arg_types: list, host_types: list[str], scalar_attrs: list, options, target,
        hints: list[str] = ()) -> str:
    """The key of ``fn``'s lowering for this call (``host_types``: the printed IR type of each
    tensor argument as the host holds it; ``hints``: their axis hints)."""
    from .source import STITCH_VERSION  # (source imports the region lowering, which imports this module)
    parts = {"fn": fn.cache_key, "file": inspect.getsourcefile(fn.fn), "args": [_describe(a) for a in args],
             "types": [_describe(t) for t in arg_types], "host": host_types, "hints": list(hints), "scalars": scalar_attrs,
             "options": sorted((k, repr(v)) for k, v in options.__dict__.items()),
             "target": [target.backend, str(target.arch), target.warp_size], "triton": compat.TRITON_VERSION,
             "stitch": STITCH_VERSION}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


def lowered(cache_key: str, context, host_types: list[str], lower: Callable[[], LoweredRegion]) -> LoweredRegion:
    """The region for ``cache_key`` (whose tensor inputs have ``host_types``): parsed from the
    memory or disk cache, else ``lower()``ed and kept."""
    entry = _memory.get(cache_key)
    if entry is None:
        entry = _read(cache_key)
        if entry is not None:
            _memory[cache_key] = entry
    if entry is not None:
        with timing.stage("region cache: parse"):
            region = _parse(entry, context)
        if region is not None:
            timing.hit("Triton region lowering")
            return region
    region = lower()
    entry = _Entry(str(region.module), region.ret_type, tuple(region.leaf_is_tensor), tuple(host_types), region.ttir)
    _memory[cache_key] = entry
    _write(cache_key, entry)
    return region


def _describe(value) -> str:
    """A deterministic description of an argument or type; JIT functions passed as constexprs by
    their cache key (their source), tuples with their field names."""
    if isinstance(value, tl.tuple_type):
        return f"({', '.join(_describe(t) for t in value.types)}){value.fields}"
    if isinstance(value, (tl.constexpr, tl.constexpr_type)):
        inner = value.value
        return f"constexpr[{inner.cache_key if isinstance(inner, JITFunction) else repr(inner)}]"
    if isinstance(value, tl.base_value):
        return _describe(value.type)
    return str(value)


def _parse(entry: _Entry, context) -> LoweredRegion | None:
    try:
        module = parse_module(entry.text, context)
    except RuntimeError:
        return None
    return lowered_region(module, entry.ret_type, list(entry.leaf_is_tensor), list(entry.host_types), entry.ttir)


# -- on disk --------------------------------------------------------------------------------------
def _path(cache_key: str) -> Path:
    return caches.default_root() / "regions" / cache_key[:2] / f"{cache_key}.json"


def _read(cache_key: str) -> _Entry | None:
    try:
        data = json.loads(_path(cache_key).read_text())
        return _Entry(data["text"], _decode(data["ret_type"]), tuple(data["leaf_is_tensor"]),
                      tuple(data["host_types"]), data["ttir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(cache_key: str, entry: _Entry) -> None:
    """Best effort: a return type JSON cannot spell, or a folder that cannot be written, leaves
    the entry in memory only."""
    try:
        body = json.dumps({"text": entry.text, "ret_type": _encode(entry.ret_type),
                           "leaf_is_tensor": list(entry.leaf_is_tensor), "host_types": list(entry.host_types),
                           "ttir": entry.ttir})
        path = _path(cache_key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.replace(tmp, path)
    except (OSError, TypeError):
        return


def _encode(ty):
    if ty is None:
        return None
    if isinstance(ty, tl.tuple_type):
        return {"tuple": [_encode(t) for t in ty.types], "fields": ty.fields}
    if isinstance(ty, tl.block_type):
        return {"block": _encode(ty.element_ty), "shape": list(ty.shape)}
    if isinstance(ty, tl.pointer_type):
        return {"pointer": _encode(ty.element_ty), "address_space": ty.address_space, "const": ty.const}
    if type(ty) is tl.dtype:
        return {"dtype": ty.name}
    raise TypeError(f"no JSON form for {ty!r}")


def _decode(data):
    if data is None:
        return None
    if "tuple" in data:
        return tl.tuple_type([_decode(t) for t in data["tuple"]], data["fields"])
    if "block" in data:
        return tl.block_type(_decode(data["block"]), data["shape"])
    if "pointer" in data:
        return tl.pointer_type(_decode(data["pointer"]), data["address_space"], data["const"])
    return tl.dtype(data["dtype"])
