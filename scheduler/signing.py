"""Signed bundles: an ed25519 signature over the exact bytes of ``manifest.json``.

The manifest holds every binary's sha256, so the signature covers the binaries too: editing a
binary (and recomputing its hash) or the manifest breaks it. Keys are PEM files as OpenSSL
writes them (``openssl genpkey -algorithm ed25519``), made by ``hybrid keygen``: the private key
(PKCS#8) signs at ``hybrid build --sign``; its public half (``.pub``) is what a team lists in
``load_bundle(..., trusted_keys=[...])``. The crypto is ``cryptography``'s, not ours; it is
imported only where a bundle is signed or checked (a GPU machine that only launches needs none).
"""
from __future__ import annotations

import json
import os
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
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw

def generate(path: str | Path) -> tuple[Path, Path]:
    """Write a new private key to ``path`` (mode 0600) and its public key to ``path.pub``."""
    path = Path(path)
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)   # never overwrite a key
    with os.fdopen(fd, "wb") as f:
        f.write(private)
    public = Path(f"{path}.pub")
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return path, public


def private_key(path: str | Path) -> Ed25519PrivateKey:
    """The ed25519 private key in PEM file ``path``; ``ValueError`` naming the file otherwise."""
    key = _load(path, serialization.load_pem_private_key, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: not an ed25519 private key (make one with `hybrid keygen {path}`)")
    return key


def public_key(key: str | Path | Ed25519PublicKey) -> Ed25519PublicKey:
    """A trusted key: an ``Ed25519PublicKey``, or the PEM file of one (a private key file also
    gives its public half)."""
    if isinstance(key, Ed25519PublicKey):
        return key
    try:
        loaded = _load(key, serialization.load_pem_public_key)
    except ValueError:
        return private_key(key).public_key()
    if not isinstance(loaded, Ed25519PublicKey):
        raise ValueError(f"{key}: not an ed25519 public key")
    return loaded


def _load(path, load, **kwargs):
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        return load(data, **kwargs)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a PEM key file ({exc})") from None


def fingerprint(key: Ed25519PublicKey) -> str:
    """The raw public key in hex: how messages name a key."""
    return key.public_bytes(*_RAW).hex()


def sign(manifest: bytes, key: Ed25519PrivateKey) -> bytes:
    """The contents of ``manifest.sig`` for ``manifest`` (the bytes of ``manifest.json``)."""
    return json.dumps({"algorithm": ALGORITHM, "public_key": fingerprint(key.public_key()),
                       "signature": key.sign(manifest).hex()}, indent=1).encode() + b"\n"


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
        keys[0].verify(raw, manifest)
    except InvalidSignature:
        raise UntrustedBundle(f"{origin}: the signature does not match manifest.json: the bundle was edited after "
                              "it was signed") from None
    return signer.hex()
