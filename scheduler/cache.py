"""Content-addressed store of built kernels.

The key is a sha256 over a canonical JSON of everything that changes the binary: the kernel's
source and, transitively, every JIT function it calls (upstream's ``JITFunction.cache_key``), the
files they live in (line info embeds their paths), the specialization, options, target, the
Triton version and toolchain, and ``interop.caches.STITCH_VERSION``. An entry is one JSON file
in the format both caches share (``interop.cache_entries``: its own checksum, written atomically,
read bounded); a damaged one is removed and rebuilt. Entries live in ``jobs/`` under the caches'
root, next to the region cache's ``regions/``.
"""
from __future__ import annotations

import ast
import base64
import binascii
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

from interop import cache_entries
from interop.cache_entries import CorruptEntry, canonical_json, sha256_json
from interop.caches import STITCH_VERSION, default_root
from interop.targets import resolve
from interop.triton import compat

from .planning import Spec

__all__ = ["Cache", "CorruptEntry", "Entry", "job_key", "reached_functions"]

FORMAT = 1


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


def reached_functions(fn) -> list:
    """``fn`` and every JIT function its body names, transitively (globals, closures and
    attributes of imported modules)."""
    from triton.runtime import JITFunction

    found, todo = {}, [fn]
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


def _lookup(node, scope):
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _lookup(node.value, scope)
        return getattr(base, node.attr, None) if inspect.ismodule(base) else None
    return None


def job_key(spec: Spec) -> str:
    files = sorted({inspect.getsourcefile(f.fn) for f in reached_functions(spec.fn)})
    return sha256_json({
        "format": FORMAT, "kernel": spec.fn.__name__, "source": spec.fn.cache_key, "files": files,
        "params": spec.params, "constexprs": spec.constexprs_json, "options": spec.options,
        "target": spec.job.target, "triton": compat.TRITON_VERSION, "stitch": STITCH_VERSION,
        "compiler": compat.compiler_fingerprint(resolve(spec.job.target))})


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
