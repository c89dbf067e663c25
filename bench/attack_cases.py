"""Attacks on bundles and signing keys, one case each, for ``bench/attacks.py`` (and the tests
of signing, keys and the manifest against the binary).

Every case takes an ``Arena`` (the softmax example built for one or two targets, a key pair,
fresh folders), does its damage, then asks the project to accept the result: load the bundle,
read the key, write the key pair, sign. It must be refused with an error of ``refused`` class
whose message matches ``refusal``; a case that returns was accepted (wrong).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from hybrid.loader import load_bundle
from scheduler.bundle import MANIFEST, SIGNATURE, write_bundle
from scheduler.manifest_schema import BundleError

ROOT = Path(__file__).resolve().parents[1]
KERNEL, REF = "softmax_kernel", "examples.softmax:softmax_kernel"
ISA = {"sm90a": "sm_90a", "sm80": "sm_80", "gfx942": "gfx942"}


@dataclass
class Arena:
    """What the cases attack: ``results`` (one kernel's ``BuildResult``s), a key pair under
    ``root``, and a new folder per call of ``folder``."""
    results: list
    root: Path
    _count: int = 0

    @property
    def targets(self) -> list[str]:
        return [r.job.target for r in self.results]

    @property
    def private(self) -> Path:
        return self.root / "keys" / "team.key"

    @property
    def public(self) -> Path:
        return self.root / "keys" / "team.key.pub"

    def folder(self) -> Path:
        self._count += 1
        path = self.root / f"case{self._count}"
        path.mkdir(parents=True)
        return path

    def bundle(self, signed: bool = True, archive: bool = False) -> Path:
        """A fresh bundle of the kernel (signed with the team key by default), named for it."""
        from scheduler import signing
        key = signing.private_key(self.private) if signed else None
        return write_bundle(self.results, self.folder() / KERNEL, archive, key)

    def load(self, path: Path, signed: bool = True, target: str | None = None, **kwargs):
        target = target or self.targets[0]
        return load_bundle(path, arch=ISA[target], trusted_keys=[self.public] if signed else None, **kwargs)


def arena(targets: list[str], root: Path | None = None, results: list | None = None) -> Arena:
    """The softmax example's ``results`` for ``targets`` (built in this process where not given)
    and the team key pair, under ``root`` (a new temporary folder by default)."""
    import hybrid
    from scheduler import InlineExecutor, build, plan
    from scheduler import signing

    if results is None:
        results = build(plan([REF], targets), hybrid.compile, executor=InlineExecutor())
    results = [r for r in results if r.job.target in targets]
    failed = [r.error for r in results if not r.ok]
    if failed or [r.job.target for r in results] != list(targets):
        raise RuntimeError(f"the attack kernel did not build for {', '.join(targets)}: {failed}")
    out = Arena(results, Path(root or tempfile.mkdtemp(prefix="attacks-")))
    signing.generate(out.private)
    return out


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    attack: Callable[[Arena], object]
    refusal: str                                   # a regex the refusal's message matches
    refused: tuple = (BundleError, ValueError)     # what a clean refusal raises
    targets: tuple = ()                            # the targets it needs built (none: any)
    slow: bool = False                             # builds through the command line
    detailed: bool = False                         # one line, then indented detail and hint lines (as RegionError)


# -- helpers ----------------------------------------------------------------------------------------
def _manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def _write_manifest(folder: Path, data: dict) -> None:
    (folder / MANIFEST).write_text(json.dumps(data, indent=1) + "\n")


def _entry(data: dict, target: str) -> dict:
    return data["targets"][target]


def _sign_raw(arena: Arena, folder: Path, message: bytes) -> None:
    """``manifest.sig`` over ``message`` with the team key, as a signer of another scheme would."""
    from scheduler import signing
    key = signing.private_key(arena.private)
    (folder / SIGNATURE).write_text(json.dumps({"algorithm": "ed25519", "public_key": signing.fingerprint(
        key.public_key()), "signature": key.sign(message).hex()}))


# -- signing: what a signature binds ------------------------------------------------------------------
def unsigned(a: Arena):
    folder = a.bundle(signed=False)
    return a.load(folder)


def binary_edited(a: Arena):
    folder = a.bundle()
    data = _manifest(folder)
    entry = _entry(data, a.targets[0])
    binary = (folder / entry["file"]).read_bytes() + b"\0"
    (folder / entry["file"]).write_bytes(binary)
    entry["sha256"] = hashlib.sha256(binary).hexdigest()
    _write_manifest(folder, data)
    return a.load(folder)


def manifest_edited(a: Arena):
    folder = a.bundle()
    data = _manifest(folder)
    _entry(data, a.targets[0])["registers"] = 1
    _write_manifest(folder, data)
    return a.load(folder)


def other_key(a: Arena):
    from scheduler import signing
    other, _ = signing.generate(a.folder() / "other.key")
    folder = write_bundle(a.results, a.folder() / KERNEL, key=signing.private_key(other))
    return a.load(folder)


def renamed(a: Arena):
    """A validly signed bundle put in the place of another kernel's (``dist/other_kernel``)."""
    folder = a.bundle()
    return a.load(folder.rename(folder.with_name("other_kernel")))


def renamed_archive(a: Arena):
    archive = a.bundle(archive=True)
    return a.load(archive.rename(archive.with_name("other_kernel.zip")))


def pinned_other_kernel(a: Arena):
    return a.load(a.bundle(), kernel="other_kernel")


def pinned_older_source(a: Arena):
    """The bundle was signed for other source than the kernel the caller pins (an older build):
    the pin is the JIT function as a pin reads it, a name and a source hash."""
    return a.load(a.bundle(), kernel=SimpleNamespace(__name__=KERNEL, cache_key="0" * 64))


def older_format(a: Arena):
    """A signed bundle of format 2, which named neither source hash nor version."""
    folder = a.bundle(signed=False)
    data = _manifest(folder)
    data["format"] = 2
    del data["source_sha256"], data["hybrid_version"]
    _write_manifest(folder, data)
    from scheduler import signing
    (folder / SIGNATURE).write_bytes(signing.sign((folder / MANIFEST).read_bytes(), signing.private_key(a.private)))
    return a.load(folder)


def signature_without_context(a: Arena):
    """Signed over the manifest's bytes alone (what the key signs for anything else)."""
    folder = a.bundle(signed=False)
    _sign_raw(a, folder, (folder / MANIFEST).read_bytes())
    return a.load(folder)


def signature_garbage(a: Arena):
    folder = a.bundle()
    (folder / SIGNATURE).write_bytes(b"{")
    return a.load(folder)


def planted_cache_entry(a: Arena):
    """A binary planted in the build cache (its checksum recomputed) must not be signed: ``hybrid
    build --sign`` builds from source. Raises if the signed bundle holds the planted binary."""
    from scheduler.cache import Cache
    target, cache_dir, out = a.targets[0], a.folder() / "cache", a.folder() / "dist"
    common = [REF, "--target", target, "--cache-dir", str(cache_dir), "-o", str(out)]
    _cli("build", *common)
    cache = Cache(cache_dir)
    (path, ) = cache_dir.glob("jobs/*/*.json")
    entry = cache.get(path.stem)
    genuine = entry.binary
    entry.binary = genuine + b"planted"
    entry.record["sha256"] = hashlib.sha256(entry.binary).hexdigest()
    cache.put(entry)
    _cli("build", *common, "--sign", str(a.private))
    kernel = a.load(out / KERNEL, target=target)
    if kernel.binary != genuine:
        return kernel   # the planted binary was signed: wrong
    raise PlantedNotSigned(f"{out / KERNEL}: signed what it built, not the planted cache entry")


class PlantedNotSigned(BundleError):
    """The outcome wanted of ``planted_cache_entry``: the planted binary was not signed."""


def _cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "hybrid.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"hybrid {' '.join(args)} failed: {proc.stderr[-2000:]}")


# -- keys ---------------------------------------------------------------------------------------------
def _signing():
    from scheduler import signing
    return signing


def keygen_over_a_key(a: Arena):
    return _signing().generate(a.private)


def keygen_through_a_link(a: Arena):
    """``KEY.pub`` planted as a link to a file of the victim's: never written through."""
    folder = a.folder()
    (folder / "victim").write_text("keep me")
    (folder / "new.key.pub").symlink_to(folder / "victim")
    return _signing().generate(folder / "new.key")


def world_readable_private_key(a: Arena):
    folder = a.folder()
    key, _ = _signing().generate(folder / "open.key")
    key.chmod(0o644)
    return _signing().private_key(key)


def fifo_key(a: Arena):
    path = a.folder() / "fifo.pub"
    os.mkfifo(path)
    return _signing().public_key(path)


def dev_zero_key(a: Arena):
    return _signing().public_key("/dev/zero")


def folder_key(a: Arena):
    return _signing().trusted_keys("/")


def two_keys_in_one_file(a: Arena):
    folder = a.folder()
    _, first = _signing().generate(folder / "one.key")
    _, second = _signing().generate(folder / "two.key")
    (folder / "both.pub").write_bytes(first.read_bytes() + second.read_bytes())
    return _signing().public_key(folder / "both.pub")


def trusted_keys_of_a_wrong_type(a: Arena):
    return load_bundle(a.bundle(), arch=ISA[a.targets[0]], trusted_keys=42)


def no_trusted_keys(a: Arena):
    return load_bundle(a.bundle(), arch=ISA[a.targets[0]], trusted_keys=[])


# -- the manifest against the binary (unsigned bundles: the binary is what the loader trusts) -------------
def edit(target: str, change: Callable[[dict, dict], None]):
    """An attack that edits ``target``'s record (``change(manifest, entry)``) and loads it."""
    def attack(a: Arena):
        folder = a.bundle(signed=False)
        data = _manifest(folder)
        change(data, _entry(data, target))
        _write_manifest(folder, data)
        return a.load(folder, signed=False, target=target)
    return attack


def _set(**values):
    return lambda data, entry: entry.update(values)


def _params(count: int):
    return lambda data, entry: (data.update(params=[{"name": f"p{i}", "type": "i32"} for i in range(count)]),
                                entry.update(entry_params=count + entry["hidden_params"]))


def _param_type(kind: str, index: int = 2):
    return lambda data, entry: data["params"][index].update(type=kind)


def _hidden(count: int):
    return lambda data, entry: entry.update(hidden_params=count, entry_params=len(data["params"]) + count)


def _dropped_param(data, entry):
    """One parameter fewer, every count kept consistent: only the binary can tell."""
    del data["params"][-1]
    for other in data["targets"].values():
        other["entry_params"] -= 1


def schema_cases(target: str) -> list[Case]:
    family, needs = "manifest vs binary", (target, )
    rows = [
        ("hidden_params 5", _hidden(5), r"hidden_params' must be an integer from 0 to 2; got 5"),
        ("hidden_params 1 (counts kept consistent)", _hidden(1),
         r"takes 7 parameters, but the manifest says 6 \(1 hidden\)"),
        ("parameter type *fp99", _param_type("*fp99", 0), r"'params\[0\].type' must be a Triton type"),
        ("i32 parameter said to be i64", _param_type("i64"), r"parameter 2 \(n_rows: i64\) is 4 bytes in the "
                                                             r"binary, but the manifest's type is 8 bytes"),
        ("a parameter dropped", _dropped_param, r"takes 7 parameters, but the manifest says 6"),
        ("10000 parameters", _params(10000), r"'params' must be a list .* of at most 1024 items; got 10000"),
        ("num_ctas 2", _set(num_ctas=2), r"built for 1 CTA\(s\) per cluster, but the manifest says num_ctas 2"),
        ("num_warps 8", _set(num_warps=8), r"built for \d+ threads per CTA, but the manifest says 8 warps"),
        ("entry name changed", _set(name="other_kernel"), r"defines no kernel 'other_kernel'"),
        ("100 targets", lambda data, entry: data.update(targets={f"t{i}": entry for i in range(100)}),
         r"'targets' must be an object with one entry per target \(at most 64\)"),
    ]
    return [Case(family, f"{name} [{target}]", edit(target, change), refusal, targets=needs)
            for name, change, refusal in rows]


# -- zip archives -------------------------------------------------------------------------------------
def _flip_in_member(member_of: Callable[[dict, str], str], offset: float = 0.5):
    """Flip one byte inside the compressed data of an archive member (``member_of(manifest, target)``)."""
    def attack(a: Arena):
        archive = a.bundle(signed=False, archive=True)
        with zipfile.ZipFile(archive) as zf:
            data = json.loads(zf.read(MANIFEST))
            info = zf.getinfo(member_of(data, a.targets[0]))
        raw = bytearray(archive.read_bytes())
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        raw[start + int(info.compress_size * offset)] ^= 0x55
        archive.write_bytes(bytes(raw))
        return a.load(archive, signed=False)
    return attack


def _truncated(a: Arena):
    archive = a.bundle(signed=False, archive=True)
    archive.write_bytes(archive.read_bytes()[:-100])
    return a.load(archive, signed=False)


def _binary_member(data: dict, target: str) -> str:
    return data["targets"][target]["file"]


ZIP = [
    *(Case("zip corruption", f"byte flipped {where} a binary's compressed data", _flip_in_member(_binary_member, at),
           r"archive member softmax_kernel\.\w+\.(cubin|hsaco) is damaged")
      for where, at in (("at the start of", 0.0), ("a tenth into", 0.1), ("halfway into", 0.5))),
    Case("zip corruption", "byte flipped in manifest.json", _flip_in_member(lambda data, target: MANIFEST),
         r"archive member manifest.json is damaged"),
    Case("zip corruption", "archive truncated", _truncated, r"not a bundle folder or readable zip archive"),
]

SIGNING = [
    Case("signing", "unsigned", unsigned, r"the bundle is not signed"),
    Case("signing", "binary edited, hash recomputed", binary_edited, r"edited after it was signed"),
    Case("signing", "manifest edited", manifest_edited, r"edited after it was signed"),
    Case("signing", "signed by another key", other_key, r"which is not among the trusted keys"),
    Case("signing", "signed bundle in another kernel's place", renamed,
         r"named 'other_kernel' but was signed for kernel 'softmax_kernel'"),
    Case("signing", "signed archive in another kernel's place", renamed_archive,
         r"named 'other_kernel' but was signed for kernel 'softmax_kernel'"),
    Case("signing", "caller pins another kernel", pinned_other_kernel, r"holds kernel 'softmax_kernel', not "
                                                                       r"'other_kernel'"),
    Case("signing", "signed for older source", pinned_older_source, r"was built from other source"),
    Case("signing", "older format (signs no source or version)", older_format,
         r"bundle format 2 does not sign its source hash and version"),
    Case("signing", "signature over the manifest alone", signature_without_context, r"edited after it was signed"),
    Case("signing", "signature file garbage", signature_garbage, r"is not a signature file"),
    Case("signing", "planted cache entry at build --sign", planted_cache_entry, r"signed what it built",
         refused=(PlantedNotSigned, ), slow=True),
]

KEYS = [
    Case("keys", "keygen over an existing key", keygen_over_a_key, r"exists?; a key is never overwritten",
         refused=(FileExistsError, )),
    Case("keys", "keygen with KEY.pub a planted link", keygen_through_a_link, r"exists; a key is never overwritten",
         refused=(FileExistsError, )),
    Case("keys", "private key readable by others", world_readable_private_key,
         r"others may read or write \(mode 0644\); run `chmod 600 "),
    Case("keys", "FIFO as a key", fifo_key, r"not a regular file \(a FIFO\)"),
    Case("keys", "/dev/zero as a key", dev_zero_key, r"not a regular file \(a character device\)"),
    Case("keys", "a folder as trusted_keys", folder_key, r"not a regular file \(a folder\)"),
    Case("keys", "two PEM keys in one file", two_keys_in_one_file, r"2 PEM blocks; a key file holds one key"),
    Case("keys", "trusted_keys of a wrong type", trusted_keys_of_a_wrong_type, r"trusted key of type int"),
    Case("keys", "trusted_keys empty", no_trusted_keys, r"trusted_keys is empty"),
]


def cases(targets: list[str], slow: bool = True) -> list[Case]:
    """Every case for a kernel built for ``targets`` (``slow``: with those that run the command line)."""
    every = SIGNING + KEYS + [c for t in targets for c in schema_cases(t)] + ZIP
    return [c for c in every if slow or not c.slow]


class Hung(Exception):
    """A case that ran past its time (a key read from a FIFO once blocked for ever)."""


def outcome(case: Case, arena: Arena, timeout: int = 300) -> tuple[str, str]:
    """``("refused", message)`` for a clean refusal of the expected class and message (one line),
    ``("wrong", what)`` where the attack was accepted, ``("error", what)`` for any other failure,
    a hang past ``timeout`` seconds included (where ``SIGALRM`` exists)."""
    def hung(signum, frame):
        raise Hung(f"no answer within {timeout} s")

    alarm = getattr(signal, "SIGALRM", None)
    previous = signal.signal(alarm, hung) if alarm else None
    if alarm:
        signal.alarm(timeout)
    try:
        return _outcome(case, arena)
    finally:
        if alarm:
            signal.alarm(0)
            signal.signal(alarm, previous)


def _outcome(case: Case, arena: Arena) -> tuple[str, str]:
    try:
        case.attack(arena)
    except case.refused as exc:
        message = str(exc)
        first, *rest = message.strip().splitlines() or [""]
        if (rest and not (case.detailed and all(line.startswith("  ") for line in rest))) \
                or not re.search(case.refusal, first):
            return "error", f"{type(exc).__name__}: {message[:300]}"
        return "refused", message
    except Exception as exc:   # noqa: BLE001 -- any other failure is a row that says so
        return "error", f"{type(exc).__name__}: {str(exc)[:300]}"
    return "wrong", "accepted"
