"""Content-addressed store of built kernels.

The key is a sha256 over a canonical JSON of everything that changes the binary: the kernel's
source and, transitively, every JIT function it calls (upstream's ``JITFunction.cache_key``), the
files they live in (line info embeds their paths), the specialization, options, target, the
Triton version and toolchain, and ``interop.source.STITCH_VERSION``. An entry is one JSON file
that carries its own checksum; it is written to a temporary file in the same folder and
renamed into place, so readers only ever see whole entries. A damaged entry reads as missing.
"""
from __future__ import annotations

import ast
import base64
import inspect
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from interop.caches import default_root
from interop.source import STITCH_VERSION
from interop.triton import compat

from .planning import Spec, canonical_json, sha256_json

FORMAT = 1


@dataclass
class Entry:
    key: str
    record: dict      # JSON: summary, launch facts, resolved specialization
    binary: bytes

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
        "signature": spec.signature, "constexprs": spec.constexprs_json, "options": spec.options,
        "target": spec.job.target, "triton": compat.TRITON_VERSION, "stitch": STITCH_VERSION,
        "compiler": compat.compiler_fingerprint(spec.job.target)})


class CorruptEntry(Exception):
    """An entry that exists but cannot be trusted; it is removed and rebuilt."""


class Cache:

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Entry | None:
        """The verified entry, None if absent; raises ``CorruptEntry`` (after removing it) if damaged."""
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            return _decode(raw, key)
        except CorruptEntry:
            path.unlink(missing_ok=True)
            raise

    def put(self, entry: Entry) -> Path:
        path = self.path(entry.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_encode(entry))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def _body(key: str, record: dict, binary_b64: str) -> dict:
    return {"format": FORMAT, "key": key, "record": record, "binary": binary_b64}


def _encode(entry: Entry) -> bytes:
    body = _body(entry.key, entry.record, base64.b64encode(entry.binary).decode())
    return canonical_json({**body, "checksum": sha256_json(body)}).encode()


def _decode(raw: bytes, key: str) -> Entry:
    try:
        data = json.loads(raw)
        body = _body(data["key"], data["record"], data["binary"])
        checksum = data["checksum"]
        binary = base64.b64decode(data["binary"], validate=True)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptEntry(f"unreadable ({type(exc).__name__})") from None
    if data.get("format") != FORMAT or data["key"] != key:
        raise CorruptEntry("written for another key or format")
    if sha256_json(body) != checksum:
        raise CorruptEntry("checksum mismatch")
    return Entry(key, data["record"], binary)
