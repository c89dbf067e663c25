"""Content-addressed store of built kernels.

The key is a sha256 over a canonical JSON of everything that changes the binary or its launch
record: the kernel's source and, transitively, every JIT function it calls (upstream's
``JITFunction.cache_key``), JIT functions passed as constexpr values (by their source and what
they reach, not their ``repr``), the files they live in (line info embeds their paths), the
parameters in order, the specialization, options, target, Triton's own key (its version, sources
and libraries), the toolchain and the environment variables Triton's cache key sees
(``compat.compiler_fingerprint``), and the project's own code (``code_stamp``: every module of
``interop``, ``scheduler`` and ``hybrid``). An entry is one JSON file in the format both caches
share (``interop.cache_entries``: its own checksum, written atomically, read bounded); a damaged
one is removed and rebuilt. Entries live in ``jobs/`` under the caches' root, next to the region
cache's ``regions/``.
"""
from __future__ import annotations

import ast
import base64
import binascii
import functools
import importlib.util
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

from interop import cache_entries
from interop.cache_entries import CorruptEntry, canonical_json, sha256_json
from interop.caches import default_root, sources_digest
from interop.targets import resolve
from interop.triton import compat

from .planning import Spec

__all__ = ["Cache", "CorruptEntry", "Entry", "code_stamp", "job_key", "reached_functions"]

FORMAT = 1
#: the project's packages whose code shapes a binary or its launch record
PACKAGES = ("interop", "scheduler", "hybrid")


@dataclass
class Entry:
    key: str
    record: dict      # JSON: summary, launch facts, resolved specialization
    binary: bytes

    def __post_init__(self):
        # The record as the cache returns it (canonical JSON, dicts in sorted order): a fresh build
        # and a cache hit hand the bundle writer the same record, so the same manifest bytes.
        self.record = json.loads(canonical_json(self.record))

    @property
    def sha256(self) -> str:
        return self.record["sha256"]


def reached_functions(*roots) -> list:
    """The JIT functions ``roots`` and every JIT function their bodies name, transitively
    (globals, closures and attributes of imported modules)."""
    from triton.runtime import JITFunction

    found, todo = {}, list(roots)
    while todo:
        f = todo.pop()
        if id(f) in found:
            continue
        found[id(f)] = f
        scope = {**f.__globals__, **inspect.getclosurevars(f.fn).nonlocals}
        for node in ast.walk(ast.parse(f.src)):
            value = _lookup(node, scope)
            if isinstance(value, JITFunction):
                todo.append(value)
    return sorted(found.values(), key=lambda f: (f.__module__, f.__qualname__))


def constexpr_functions(values) -> list:
    """The JIT functions among constexpr ``values`` (in lists, tuples and dicts too): a kernel
    calls them, but its own ``cache_key`` does not see them."""
    from triton.runtime import JITFunction

    if isinstance(values, JITFunction):
        return [values]
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, (list, tuple)):
        return [f for v in values for f in constexpr_functions(v)]
    return []


def _lookup(node, scope):
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _lookup(node.value, scope)
        return getattr(base, node.attr, None) if inspect.ismodule(base) else None
    return None


def job_key(spec: Spec) -> str:
    passed = {name: constexpr_functions(value) for name, value in spec.constexprs.items()}
    files = sorted({inspect.getsourcefile(f.fn) for f in reached_functions(spec.fn, *sum(passed.values(), []))})
    return sha256_json({
        "format": FORMAT, "kernel": spec.fn.__name__, "source": spec.fn.cache_key, "files": files,
        # upstream's cache_key of a function covers what it calls, as the kernel's does
        "passed": {name: [f.cache_key for f in fns] for name, fns in passed.items() if fns},
        "params": spec.params, "constexprs": spec.constexprs_json, "options": spec.options,
        "target": spec.job.target, "triton": compat.TRITON_VERSION, "code": code_stamp(),
        "compiler": compat.compiler_fingerprint(resolve(spec.job.target))})


@functools.cache
def code_stamp() -> str:
    """A sha256 over the project's own modules (``PACKAGES``): an edit to how regions are
    stitched, launch facts read or records written invalidates what the old code built. Hashed
    once per process (milliseconds): a process runs the code it imported."""
    return sources_digest(folder for package in PACKAGES
                          for folder in importlib.util.find_spec(package).submodule_search_locations)[:16]


class Cache:
    """The job cache under ``root`` (default: the caches' root, ``interop.caches.default_root``)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()

    def path(self, key: str) -> Path:
        return self.root / "jobs" / key[:2] / f"{key}.json"

    def get(self, key: str) -> Entry | None:
        """The verified entry, None if absent; raises ``CorruptEntry`` (after removing it) if damaged."""
        fields = cache_entries.read(self.path(key), key, FORMAT)
        if fields is None:
            return None
        try:
            record, binary = fields["record"], base64.b64decode(fields["binary"], validate=True)
            if not isinstance(record, dict) or record.get("sha256") is None:
                raise TypeError("record")
        except (KeyError, TypeError, binascii.Error) as exc:
            cache_entries.remove(self.path(key))
            raise CorruptEntry(f"unreadable ({type(exc).__name__})") from None
        return Entry(key, record, binary)

    def put(self, entry: Entry) -> Path:
        return cache_entries.write(self.path(entry.key), entry.key, FORMAT,
                                   {"record": entry.record, "binary": base64.b64encode(entry.binary).decode()})
