"""Lowered Triton regions kept between call sites and between compiles, in memory and on disk.

A region's lowering depends on: the function's source and, transitively, the JIT functions it
calls (upstream's ``JITFunction.cache_key``, which covers their first lines too) and its file
(locations name it); the call's argument types, every constexpr value and, for each tensor, the
host's full type string (layout included); the scalar arguments' specialization; the backend
options; the target; the Triton release; the backend's toolchain and the environment variables
Triton's own cache key sees (``compat.compiler_fingerprint``, as the job cache keys a build:
``TRITON_HIP_USE_BLOCK_PINGPONG``, say); and this project's own code (``caches.STITCH_VERSION``).
The key is a sha256 over all of them. MLIR operations belong to one context, so an entry holds
the lowered module as text and is parsed back into the compile's own context through Triton's
bindings; it also holds the region's module after Triton's ``ttir`` stage (a Gluon host's
``asm["ttir"]``), and an entry written without it is a miss. On disk entries live in
``regions/`` under the caches' root (``caches.default_root``), in the job cache's entry format
(``cache_entries``: checksum, key checked, bounded read, atomic write). Before its text reaches
MLIR's parser an entry's fields are checked (types, dtype names, leaf counts against the call's
inputs, a module that defines the region function: MLIR's parser accepts an empty module, on
which the splice would crash the process), and the parsed module must verify and rebuild a
region; an entry that fails any check is removed and the region lowered again.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from triton.runtime import JITFunction

from .. import cache_entries, caches
from ..instrumentation import timing
from ..cache_entries import CorruptEntry
from .lower_triton import REGION_FUNCTION, LoweredRegion, lowered_region
from ..triton import compat
from ..triton.bindings import parse_module
from ..triton.language import AggregateType
from ..triton.language import core as tl


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
        hints: list[str] = (), results: dict | None = None) -> str:
    """The key of ``fn``'s lowering for this call (``host_types``: the printed IR type of each
    tensor argument as the host holds it; ``hints``: their axis hints; ``results``: the printed
    layout its caller takes each result in, where given)."""
    parts = {"fn": fn.cache_key, "file": inspect.getsourcefile(fn.fn), "args": [_describe(a) for a in args],
             "types": [_describe(t) for t in arg_types], "host": host_types, "hints": list(hints),
             "scalars": scalar_attrs, "results": sorted((results or {}).items()),
             "options": sorted((k, repr(v)) for k, v in options.__dict__.items()),
             "target": [target.backend, str(target.arch), target.warp_size], "triton": compat.TRITON_VERSION,
             "stitch": caches.STITCH_VERSION, "compiler": compat.compiler_fingerprint(target)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


def lowered(cache_key: str, context, host_types: list[str], lower: Callable[[], LoweredRegion]) -> LoweredRegion:
    """The region for ``cache_key`` (whose tensor inputs have ``host_types``): parsed from the
    memory or disk cache, else ``lower()``ed and kept."""
    entry = _memory.get(cache_key) or _read(cache_key, host_types)
    if entry is not None:
        with timing.stage("region cache: parse"):
            region = _parse(entry, context)
        if region is not None:
            _memory[cache_key] = entry
            timing.hit("Triton region lowering")
            return region
        _memory.pop(cache_key, None)
        cache_entries.remove(_path(cache_key))
    region = lower()
    entry = _Entry(str(region.module), region.ret_type, tuple(region.leaf_is_tensor), tuple(host_types), region.ttir)
    _memory[cache_key] = entry
    _write(cache_key, entry)
    return region


def _describe(value) -> str:
    """A deterministic description of an argument or type; JIT functions passed as constexprs by
    their cache key (their source), tuples with their field names, aggregates by their fields."""
    if isinstance(value, tl.tuple_type):
        return f"({', '.join(_describe(t) for t in value.types)}){value.fields}"
    if isinstance(value, AggregateType):   # (a ``PointerDescriptor``: its fields, not their addresses)
        return f"{value.base_cls.__qualname__}<{', '.join(f'{n}: {_describe(t)}' for n, t in value.fields)}>"
    if isinstance(value, (tl.constexpr, tl.constexpr_type)):
        inner = value.value
        return f"constexpr[{inner.cache_key if isinstance(inner, JITFunction) else repr(inner)}]"
    if isinstance(value, tl.base_value):
        return _describe(value.type)
    return str(value)


def _parse(entry: _Entry, context) -> LoweredRegion | None:
    """The region an entry holds, in ``context``; None where its module does not parse, verify or
    rebuild a region (checked fields first: ``_read``)."""
    try:
        module = parse_module(entry.text, context)
    except RuntimeError:
        return None
    if not module.has_function(REGION_FUNCTION) or not module.verify():
        return None
    try:
        return lowered_region(module, entry.ret_type, list(entry.leaf_is_tensor), list(entry.host_types), entry.ttir)
    except Exception:   # a module that parses but is not a lowered region: lower it afresh
        return None


# -- on disk --------------------------------------------------------------------------------------
FORMAT = 1


def _path(cache_key: str) -> Path:
    return caches.default_root() / "regions" / cache_key[:2] / f"{cache_key}.json"


def _read(cache_key: str, host_types: list[str]) -> _Entry | None:
    """The disk entry for ``cache_key`` if it is intact and fits this call (``host_types``); a
    damaged one is removed (the caller lowers the region again and rewrites it)."""
    try:
        data = cache_entries.read(_path(cache_key), cache_key, FORMAT)
        return None if data is None else _entry(data, host_types)
    except CorruptEntry:
        return None
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        cache_entries.remove(_path(cache_key))
        return None


def _entry(data: dict, host_types: list[str]) -> _Entry:
    """An entry's fields, checked: ``ValueError`` (or ``KeyError``/``TypeError``) if any is off."""
    text, ttir, leaves = data["text"], data["ttir"], data["leaf_is_tensor"]
    if not (isinstance(text, str) and isinstance(ttir, str) and re.search(r"^module\b", text, re.M)
            and f"@{REGION_FUNCTION}(" in text):
        raise ValueError("not a lowered region's module")
    if not (isinstance(leaves, list) and all(isinstance(x, bool) for x in leaves)):
        raise ValueError("leaf_is_tensor")
    if data["host_types"] != list(host_types) or sum(leaves) != len(host_types):
        raise ValueError("written for other inputs")
    return _Entry(text, _decode(data["ret_type"]), tuple(leaves), tuple(host_types), ttir)


def _write(cache_key: str, entry: _Entry) -> None:
    """Best effort: a return type JSON cannot spell, or a folder that cannot be written, leaves
    the entry in memory only."""
    try:
        cache_entries.write(_path(cache_key), cache_key, FORMAT,
                            {"text": entry.text, "ret_type": _encode(entry.ret_type),
                             "leaf_is_tensor": list(entry.leaf_is_tensor), "host_types": list(entry.host_types),
                             "ttir": entry.ttir})
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
    """The type ``_encode`` wrote; ``ValueError`` for anything else (a name no dtype has, a bad shape)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("not a type")
    if "tuple" in data:
        return tl.tuple_type([_decode(t) for t in data["tuple"]], data["fields"])
    if "block" in data:
        shape = data["shape"]
        if not (isinstance(shape, list) and shape and all(type(d) is int and d > 0 for d in shape)):
            raise ValueError("shape")
        return tl.block_type(_decode(data["block"]), shape)
    if "pointer" in data:
        return tl.pointer_type(_decode(data["pointer"]), data["address_space"], data["const"])
    if data.get("dtype") not in _DTYPES:
        raise ValueError("dtype")
    return tl.dtype(data["dtype"])


_DTYPES = {*tl.dtype.SINT_TYPES, *tl.dtype.UINT_TYPES, *tl.dtype.FP_TYPES, *tl.dtype.OTHER_TYPES}
