"""Bundles: one kernel's binaries for several targets and a ``manifest.json``. JSON only, no pickle.

    <kernel>/manifest.json
    <kernel>/<kernel>.<target>.cubin | .hsaco              (or <kernel>.<target>.config<i>.cubin | .hsaco)
or the same files in one zip archive ``<kernel>.zip``. The manifest names the kernel, its launch
parameters in order, and per target: the file, its sha256 and what a launcher needs (entry
name, warps, warp size, shared memory, hidden trailing parameters, scratch sizes), plus
registers and spills where known and the Triton version that built it. A kernel built with
autotune configs lists them (``configs``: key and values, in the module's order) and holds one
such record per config under each target (``targets[t]["configs"][key]``, next to the target's
``isa``); the loader launches one of them, chosen by key. It also names what a signature binds:
the kernel's source hash (``source_hash``) and the project's and Triton's versions. A signed
bundle also holds ``manifest.sig`` (``scheduler.signing``) and is named for its kernel (its
folder, or its archive less ``.zip``), so a signed bundle of another kernel put in its place is
refused.

A bundle is read as untrusted input: only plain file names directly in it, no links, every read
bounded, the manifest checked against the format (``manifest_schema``) before anything uses it.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import re
import secrets
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from .manifest_schema import BundleError, ManifestError, UntrustedBundle, validate
from .version import project_version

MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"   # scheduler.signing (imported where a bundle is signed or checked)
FORMAT = 3          # 2: autotune configs; 3: source hash and project version (older formats read as before)
MAX_MANIFEST = 4 << 20
MAX_BINARY = 256 << 20
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)   # (not on Windows, where links need privileges)
SUFFIX = {"cuda": "cubin", "hip": "hsaco"}
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)   # fixed timestamps: the same bundle gives the same archive bytes


def manifest(results: list) -> dict:
    """The manifest of one kernel's successful ``BuildResult``s (one per target, or per target
    and config)."""
    records = [r.entry.record for r in results]
    first = records[0]
    for r in records[1:]:
        if (r["kernel"], r["params"]) != (first["kernel"], first["params"]):
            raise ValueError(f"one bundle holds one kernel and signature; got {first['kernel']} and {r['kernel']} "
                             f"({first['params']} vs {r['params']})")
    if len({(r["target"], _config_key(r)) for r in records}) != len(records):
        raise ValueError(f"{first['kernel']}: two builds for the same target (and config) in one bundle")
    configs = {r["config"]["index"]: r["config"] for r in records if r.get("config")}
    if configs and len(configs) * len({r["target"] for r in records}) != len(records):
        raise ValueError(f"{first['kernel']}: a bundle holds every config for every target, or no configs")
    targets: dict[str, dict] = {}
    for r in records:
        entry = {"file": file_name(r), "sha256": r["sha256"], **r["launch"], "constexprs": r["constexprs"],
                 "options": r["options"], "triton_version": r["triton_version"]}
        if configs:
            slot = targets.setdefault(r["target"], {"isa": r["launch"]["isa"], "configs": {}})
            slot["configs"][_config_key(r)] = entry
        else:
            targets[r["target"]] = entry
    from .planning import resolve   # (Triton: only where a bundle is written)
    data = {"format": FORMAT, "kernel": first["kernel"], "source": source_name(first["ref"]),
            "source_sha256": source_hash(resolve(results[0].job).fn), "hybrid_version": project_version(),
            "params": first["params"],
            "triton_version": first["triton_version"], "targets": targets}
    if configs:
        data["configs"] = [{"key": c["key"], "values": c["values"]} for _, c in sorted(configs.items())]
    return data


def source_hash(kernel) -> str:
    """The hash a bundle records for ``kernel``'s source: Triton's ``cache_key`` of the JIT
    function (a sha256 over its source, the JIT functions it calls and the constexpr globals it
    reads); an autotuned or heuristics-wrapped kernel's is the JIT function's inside."""
    while not hasattr(kernel, "cache_key") and hasattr(kernel, "fn"):
        kernel = kernel.fn
    if not isinstance(getattr(kernel, "cache_key", None), str):
        raise TypeError(f"{kernel!r} is not a JIT kernel (it has no source hash)")
    return kernel.cache_key


def bundle_name(path: Path) -> str:
    """A bundle's own name: its folder's, or its archive's less ``.zip``."""
    return path.stem if path.suffix == ".zip" and not path.is_dir() else path.name


def source_name(ref: str) -> str:
    """The kernel's source as a bundle names it: a file by its name alone (a bundle travels; the
    build machine's folders mean nothing where it is loaded), a package module as given."""
    module, _, name = ref.rpartition(":")
    return f"{Path(module).name}:{name}" if module.endswith(".py") else ref


def file_name(record: dict) -> str:
    """``<kernel>.<target>[.config<i>].<cubin|hsaco>``."""
    config = f".config{record['config']['index']}" if record.get("config") else ""
    return f"{record['kernel']}.{record['target']}{config}.{SUFFIX[record['launch']['backend']]}"


def _config_key(record: dict) -> str | None:
    return record["config"]["key"] if record.get("config") else None


def write_bundle(results: list, path: str | Path, archive: bool = False, key=None) -> Path:
    """Write one kernel's results as a folder ``path`` (or ``path.zip`` with ``archive``), signed
    with ``key`` (an ed25519 private key, ``signing.private_key``) where given. A bundle already
    there is replaced only once the new one is whole (``_replace``)."""
    data = manifest(results)
    files = {MANIFEST: json.dumps(data, indent=1).encode() + b"\n"}
    path = Path(path).with_suffix(".zip") if archive else Path(path)
    if key is not None:
        if bundle_name(path) != data["kernel"]:
            raise ValueError(f"{path}: a signed bundle is named for its kernel ({data['kernel']}); write it to "
                             f"{path.with_name(data['kernel'] + path.suffix)}")
        from .signing import sign
        files[SIGNATURE] = sign(files[MANIFEST], key)
    files.update({file_name(r.entry.record): r.entry.binary for r in results})
    if archive:
        _replace(path, lambda new: _write_archive(new, files), folder=False)
    else:
        _replace(path, lambda new: _write_folder(new, files), folder=True)
    return path


def _replace(path: Path, write, folder: bool) -> None:
    """Write the new bundle beside ``path`` (``write(new)``), then rename it into place: the old
    bundle stays loadable until the new one is whole, and a failure at any point (a full disk)
    leaves it as it was. A folder is swapped in one exchange where the system has it, else with
    two renames, the old one removed last."""
    if os.path.lexists(path) and (path.is_symlink() or path.is_dir() != folder):
        raise BundleError(f"{path}: exists and is not a bundle {'folder' if folder else 'archive'}; "
                          "move it away or write the bundle elsewhere")
    if folder and path.is_dir():
        foreign = sorted(p.name for p in path.iterdir() if not _bundle_file(p))
        if foreign:   # replacing the folder would delete them
            raise BundleError(f"{path}: holds {', '.join(foreign)}, which no bundle holds; move them away or "
                              "write the bundle elsewhere")
    path.parent.mkdir(parents=True, exist_ok=True)
    new = _beside(path, "new")
    try:
        write(new)
        if not folder or not path.exists():
            os.replace(new, path)
            return
        if _exchange(new, path):   # one atomic swap: no moment without a bundle at ``path``
            shutil.rmtree(new, ignore_errors=True)
            return
        old = _beside(path, "old")
        os.rename(path, old)
        try:
            os.rename(new, path)
        except BaseException:
            os.rename(old, path)
            raise
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        if new.is_dir():
            shutil.rmtree(new, ignore_errors=True)
        else:
            new.unlink(missing_ok=True)
        raise


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system has no such call, and the caller falls back to two renames."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, rename_exchange = -100, 2
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):   # not on this kernel or file system
        return False
    raise OSError(err, os.strerror(err), str(b))


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _beside(path: Path, tag: str) -> Path:
    """A fresh hidden name next to ``path`` (same folder, so same file system: renames are atomic)."""
    return path.with_name(f".{path.name}.{tag}-{secrets.token_hex(6)}")


def _bundle_file(entry: Path) -> bool:
    return entry.is_file() and not entry.is_symlink() and \
        (entry.name in (MANIFEST, SIGNATURE) or entry.suffix[1:] in SUFFIX.values())


def _write_folder(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir()
    for name, content in files.items():
        _write_file(folder / name, content)


def _write_archive(path: Path, files: dict[str, bytes]) -> None:
    with open(path, "xb") as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(files):
                zf.writestr(zipfile.ZipInfo(name, _ZIP_EPOCH), files[name], zipfile.ZIP_DEFLATED)
        f.flush()
        os.fsync(f.fileno())


def _write_file(path: Path, content: bytes) -> None:
    """Written and synced: a bundle renamed into place holds whole files even after a power loss."""
    with open(path, "xb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())


def write_bundles(results: list, out_dir: str | Path, archive: bool = False, key=None) -> dict[str, Path]:
    """One bundle per kernel under ``out_dir`` from the successful results."""
    by_kernel: dict[str, list] = {}
    for r in results:
        if r.ok:
            by_kernel.setdefault(r.entry.record["kernel"], []).append(r)
    return {k: write_bundle(rs, Path(out_dir) / k, archive, key) for k, rs in by_kernel.items()}


@dataclass
class Bundle:
    """An opened bundle whose manifest follows the format (and is signed by a trusted key, where
    keys were given: ``signer`` is that key's fingerprint)."""
    path: Path
    manifest: dict
    signer: str | None = None

    def read(self, name: str, limit: int = MAX_BINARY) -> bytes:
        """The bytes of file ``name``, which must be a regular file directly in the bundle (no
        folders, no links) of at most ``limit`` bytes."""
        return _read_member(self.path, name, limit)


def read_bundle(path: str | Path, trusted_keys=None, kernel=None) -> Bundle:
    """Open a bundle folder or zip archive; its manifest is checked against the format before
    anything uses it and, with ``trusted_keys`` (``signing.trusted_keys``: a key file, key or
    list of them), its signature first (``signing.verify``), then what the signature binds
    (``check_bound``). ``kernel`` (a name, or the JIT function) pins the kernel expected."""
    path = Path(path)
    if not path.exists():
        raise NotABundle(f"{path}: not a bundle (no such folder or archive)")
    try:
        raw = _read_member(path, MANIFEST, MAX_MANIFEST)
    except MissingFile as exc:
        raise NotABundle(f"{path}: not a bundle ({exc})") from None
    signer = None
    if trusted_keys is not None:
        from .signing import trusted_keys as public_keys, verify
        keys = public_keys(trusted_keys)
        try:
            signature = _read_member(path, SIGNATURE, MAX_MANIFEST)
        except MissingFile:
            signature = None
        signer = verify(raw, signature, keys, str(path))
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:   # RecursionError: nesting deeper than the parser goes
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ManifestError(f"{path}: {MANIFEST} is not valid JSON ({reason}); rebuild the bundle") from None
    bundle = Bundle(path, validate(data, str(path)), signer)
    check_bound(bundle, kernel)
    return bundle


def check_bound(bundle: Bundle, kernel=None) -> None:
    """Refuse a signed bundle that does not name its source hash and project version (an older
    format) or that is not where it was built for (its folder or archive is named for another
    kernel: a validly signed bundle copied in place of this one), and any bundle that is not the
    ``kernel`` asked for: a name, or a JIT function, whose source hash must match too (a bundle
    signed for an older version of its source)."""
    data, origin = bundle.manifest, str(bundle.path)
    if bundle.signer is not None:
        if data["format"] < 3:
            raise UntrustedBundle(f"{origin}: bundle format {data['format']} does not sign its source hash and "
                                  "version; rebuild it with `hybrid build --sign KEY`")
        if bundle_name(bundle.path) != data["kernel"]:
            raise UntrustedBundle(f"{origin}: the bundle is named {bundle_name(bundle.path)!r} but was signed for "
                                  f"kernel {data['kernel']!r}: another kernel's bundle in its place?")
    if kernel is None:
        return
    name = kernel if isinstance(kernel, str) else getattr(kernel, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"kernel={kernel!r}: expected a kernel name or the JIT function")
    if data["kernel"] != name:
        raise UntrustedBundle(f"{origin}: the bundle holds kernel {data['kernel']!r}, not {name!r}")
    if not isinstance(kernel, str):
        expected = source_hash(kernel)
        if data.get("source_sha256") != expected:
            raise UntrustedBundle(f"{origin}: kernel {name!r} was built from other source (source hash "
                                  f"{str(data.get('source_sha256'))[:16]}..., this {name}'s is {expected[:16]}...): "
                                  "an older or newer build; rebuild it from this source")


class NotABundle(BundleError, FileNotFoundError):
    pass


class MissingFile(BundleError):
    pass


def _read_member(bundle: Path, name: str, limit: int) -> bytes:
    if not _PLAIN_NAME.fullmatch(name):
        raise BundleError(f"{bundle}: {name!r} is not a plain file name in the bundle (no folders, '..' or "
                          "absolute paths)")
    if bundle.is_dir():
        return _read_file(bundle, name, limit)
    try:
        with zipfile.ZipFile(bundle) as zf:
            try:
                info = zf.getinfo(name)
            except KeyError:
                raise MissingFile(f"no {name} in the archive") from None
            if stat.S_IFMT(info.external_attr >> 16) not in (0, stat.S_IFREG):
                raise BundleError(f"{bundle}: {name} is not a regular file in the archive (a link?)")
            if info.file_size > limit:
                raise BundleError(f"{bundle}: {name} is {info.file_size} bytes, over the {limit}-byte limit")
            try:
                with zf.open(info) as f:
                    data = f.read(limit + 1)
            except (zlib.error, zipfile.BadZipFile, EOFError) as exc:   # damaged compressed data or a CRC mismatch
                raise BundleError(f"{bundle}: archive member {name} is damaged ({exc}); rebuild the bundle") from None
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise NotABundle(f"{bundle}: not a bundle folder or readable zip archive ({exc})") from None
    if len(data) > limit:
        raise BundleError(f"{bundle}: {name} holds over {limit} bytes")
    return data


def _read_file(folder: Path, name: str, limit: int) -> bytes:
    """Reads ``folder/name`` without following a link and never more than ``limit`` bytes (a
    link to ``/dev/zero`` or a FIFO in its place must not hang or exhaust memory)."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | _NO_FOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise MissingFile(f"no {name} in {folder}") from None
    except OSError as exc:
        kind = "a symbolic link (a bundle's files must be in it)" if exc.errno == errno.ELOOP else exc.strerror
        raise BundleError(f"{folder}: {name} is {kind}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:   # checked first: Python refuses a folder's fd
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"{folder}: {name} is not a regular file")
        raise BundleError(f"{folder}: {name} is {info.st_size} bytes, over the {limit}-byte limit")
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise BundleError(f"{folder}: {name} holds over {limit} bytes")
    return data
