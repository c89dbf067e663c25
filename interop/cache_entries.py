"""The on-disk entry format both caches share (the job cache's built kernels, the region cache's
lowerings): one JSON file per key, carrying its format, its key and a sha256 of both plus its
fields, written to a temporary file in the same folder and renamed into place, so a reader only
ever sees whole entries.

A read trusts nothing: the path must be a regular file (not a link, folder, FIFO or device: a
``/dev/zero`` in its place would never end), at most ``MAX_ENTRY`` bytes, valid JSON with the
right format, key and checksum. Anything else is a ``CorruptEntry``, and the entry is removed
(a folder too), so the caller rebuilds it and the next write succeeds.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

MAX_ENTRY = 256 << 20
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)   # (not on Windows, where links need privileges)


class CorruptEntry(Exception):
    """An entry that exists but cannot be trusted; it has been removed, to be rebuilt."""


def canonical_json(value) -> str:
    """The one serialization every key and checksum is taken over (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sha256_json(value) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def read(path: Path, key: str, fmt: int) -> dict | None:
    """The fields of the entry for ``key`` at ``path``; None if there is none; ``CorruptEntry``
    (after removing it) if it is damaged."""
    try:
        return _check(_read_bounded(path), key, fmt)
    except CorruptEntry:
        remove(path)
        raise


def write(path: Path, key: str, fmt: int, fields: dict) -> Path:
    """Write the entry atomically; a folder or special file in its place is removed first."""
    body = {**fields, "format": fmt, "key": key}
    data = canonical_json({**body, "checksum": sha256_json(body)}).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() and os.path.lexists(path):
        remove(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove(path: Path) -> None:
    """Remove whatever is at ``path`` (file, link, folder); gone already is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def _read_bounded(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NO_FOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CorruptEntry("a link" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):   # checked first: Python refuses to open a folder's fd
        os.close(fd)
        raise CorruptEntry("not a regular file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_ENTRY + 1)
    if len(data) > MAX_ENTRY:
        raise CorruptEntry(f"over {MAX_ENTRY} bytes")
    return data


def _check(raw: bytes | None, key: str, fmt: int) -> dict | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        checksum = data.pop("checksum")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise CorruptEntry(f"unreadable ({type(exc).__name__})") from None
    if data.get("format") != fmt or data.get("key") != key:
        raise CorruptEntry("written for another key or format")
    if sha256_json(data) != checksum:
        raise CorruptEntry("checksum mismatch")
    return data
