"""Signed bundles: an ed25519 signature over the exact bytes of ``manifest.json``.

The manifest holds every binary's sha256, so the signature covers the binaries too: editing a
binary (and recomputing its hash) or the manifest breaks it. It also names the kernel (the
bundle's own name: a signed bundle's folder or archive is named for it), the kernel's source
hash, the targets, and the project's and Triton's versions, so a validly signed bundle of another
kernel or of older source put in a bundle's place is refused (``bundle.check_bound``). What is
signed is ``CONTEXT`` then the manifest's bytes: a signature made for anything else never
verifies as a bundle's.

Keys are PEM files as OpenSSL writes them (``openssl genpkey -algorithm ed25519``), made by
``hybrid keygen``, handled as ssh-keygen and minisign do: written only where nothing is (no
link followed, nothing overwritten unless asked), the private key (PKCS#8) mode 0600 and refused
when others may read it, each read bounded and of a regular file only (a FIFO or ``/dev/zero``
named as a key is refused at once), one key per file. The private key signs at ``hybrid build
--sign``; its public half (``.pub``) is what a team lists in ``load_bundle(..., trusted_keys=...)``.
The crypto is ``cryptography``'s, not ours; it is imported only where a bundle is signed or
checked (a GPU machine that only launches needs none).
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
except ImportError as exc:   # a project dependency, but a GPU machine may only have what launches need
    raise ImportError(f"signing and checking bundles needs the 'cryptography' package ({exc}); "
                      "pip install cryptography") from None

from .bundle import SIGNATURE
from .manifest_schema import UntrustedBundle

ALGORITHM = "ed25519"
CONTEXT = b"triton-hybrid bundle manifest v1\n"
MAX_KEY_FILE = 16 << 10          # a PEM ed25519 key is about 120 bytes
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw
_PEM_BEGIN = b"-----BEGIN "
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class KeyFileError(ValueError):
    """A key file that cannot be used: unreadable, not a regular file, too permissive, not one PEM key."""


def generate(path: str | Path, force: bool = False) -> tuple[Path, Path]:
    """Write a new private key to ``path`` (mode 0600) and its public key to ``path.pub``.
    Neither file may exist (``FileExistsError``) unless ``force``, which replaces them; a link in
    either place is never followed (with ``force`` the link itself is replaced)."""
    path = Path(path)
    public = Path(f"{path}.pub")
    if not force:
        taken = [str(p) for p in (path, public) if os.path.lexists(p)]
        if taken:
            raise FileExistsError(f"{' and '.join(taken)} exist{'s' if len(taken) == 1 else ''}; a key is never "
                                  "overwritten (choose another name, or pass --force to replace it)")
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    for file, data, mode in ((path, private, 0o600), (public, key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)):
        if force and os.path.lexists(file):
            if os.path.isdir(file) and not os.path.islink(file):
                raise IsADirectoryError(f"{file} is a folder; a key file is never put in its place")
            os.unlink(file)   # the link or file itself, never what a link points at
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return path, public


def private_key(path: str | Path) -> Ed25519PrivateKey:
    """The ed25519 private key in PEM file ``path``; ``KeyFileError`` naming the file otherwise
    (also where anyone but its owner may read or write it: ``chmod 600``)."""
    data, mode = _read_key_file(path)
    if b"PRIVATE KEY-----" not in data:
        hint = "sign with the private key file, not its .pub" if b"PUBLIC KEY-----" in data else \
            f"make one with `hybrid keygen {path}`"
        raise KeyFileError(f"{path}: not a PEM private key ({hint})")
    if mode & 0o077:
        raise KeyFileError(f"{path}: a private key that others may read or write (mode {stat.S_IMODE(mode):04o}); "
                           f"run `chmod 600 {path}`")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path}: not a PEM private key ({_first_line(exc)})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path}: not an ed25519 private key (make one with `hybrid keygen {path}`)")
    return key


def public_key(key) -> Ed25519PublicKey:
    """A trusted key: an ``Ed25519PublicKey`` (or private key: its public half), PEM bytes of
    one, or the PEM file of one (a path, ``str`` or ``Path``; a private key file also gives its
    public half)."""
    if isinstance(key, Ed25519PublicKey):
        return key
    if isinstance(key, Ed25519PrivateKey):
        return key.public_key()
    if isinstance(key, (bytes, bytearray, memoryview)):
        return _public_from_pem(bytes(key), "trusted key bytes", None)
    if isinstance(key, (str, os.PathLike)):
        data = _read_key_file(key)[0]
        return _public_from_pem(data, str(key), key)
    raise KeyFileError(f"trusted key of type {type(key).__name__}: expected the path of a PEM key file (str or "
                       "Path), PEM bytes, or an Ed25519PublicKey")


def trusted_keys(keys) -> list[Ed25519PublicKey]:
    """``load_bundle``'s ``trusted_keys``: one key (a path, PEM bytes or key object, see
    ``public_key``) or a list or tuple of them; never empty (no bundle could load)."""
    many = keys if isinstance(keys, (list, tuple)) else [keys]
    if not many:
        raise KeyFileError("trusted_keys is empty: no bundle could load; list the public key files to trust "
                           "(trusted_keys=['team.key.pub'])")
    return [public_key(k) for k in many]


def _public_from_pem(data: bytes, where: str, path) -> Ed25519PublicKey:
    _one_key(data, where)
    try:
        loaded = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        if path is None or b"PRIVATE KEY" not in data:
            raise KeyFileError(f"{where}: not a PEM public key") from None
        return private_key(path).public_key()
    if not isinstance(loaded, Ed25519PublicKey):
        raise KeyFileError(f"{where}: not an ed25519 public key")
    return loaded


def _read_key_file(path) -> tuple[bytes, int]:
    """The bytes and mode of key file ``path``: a regular file of at most ``MAX_KEY_FILE`` bytes
    (opened without blocking, so a FIFO or device is refused at once) holding one PEM block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:   # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise KeyFileError(f"cannot read key file {path}: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"{path}: not a regular file ({_kind(info.st_mode)}); a key is a PEM file")
        if info.st_size > MAX_KEY_FILE:
            raise KeyFileError(f"{path}: {info.st_size} bytes, over the {MAX_KEY_FILE}-byte limit of a key file")
        data = os.read(fd, MAX_KEY_FILE + 1)
    finally:
        os.close(fd)
    _one_key(data, str(path))
    return data, info.st_mode


def _one_key(data: bytes, where: str) -> None:
    blocks = data.count(_PEM_BEGIN)
    if blocks > 1:
        raise KeyFileError(f"{where}: {blocks} PEM blocks; a key file holds one key (list each in its own file)")


def _kind(mode: int) -> str:
    kinds = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
             stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}
    return kinds.get(stat.S_IFMT(mode), "not a plain file")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def fingerprint(key: Ed25519PublicKey) -> str:
    """The raw public key in hex: how messages name a key."""
    return key.public_bytes(*_RAW).hex()


def sign(manifest: bytes, key: Ed25519PrivateKey) -> bytes:
    """The contents of ``manifest.sig`` for ``manifest`` (the bytes of ``manifest.json``)."""
    return json.dumps({"algorithm": ALGORITHM, "public_key": fingerprint(key.public_key()),
                       "signature": key.sign(CONTEXT + manifest).hex()}, indent=1).encode() + b"\n"


def verify(manifest: bytes, signature: bytes | None, trusted: list[Ed25519PublicKey], origin: str) -> str:
    """The fingerprint of the trusted key that signed ``manifest``; ``UntrustedBundle`` otherwise."""
    if signature is None:
        raise UntrustedBundle(f"{origin}: the bundle is not signed (no {SIGNATURE}) and trusted keys were given; "
                              "build it with `hybrid build --sign KEY`")
    try:
        data = json.loads(signature)
        signer, raw = bytes.fromhex(data["public_key"]), bytes.fromhex(data["signature"])
        algorithm = data["algorithm"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise UntrustedBundle(f"{origin}: {SIGNATURE} is not a signature file") from None
    if algorithm != ALGORITHM:
        raise UntrustedBundle(f"{origin}: {SIGNATURE} uses {algorithm!r}; this loader checks {ALGORITHM} only")
    keys = [k for k in trusted if k.public_bytes(*_RAW) == signer]
    if not keys:
        raise UntrustedBundle(f"{origin}: signed by key {signer.hex()[:16]}..., which is not among the trusted keys")
    try:
        keys[0].verify(raw, CONTEXT + manifest)
    except InvalidSignature:
        raise UntrustedBundle(f"{origin}: the signature does not match manifest.json: the bundle was edited after "
                              "it was signed") from None
    return signer.hex()
