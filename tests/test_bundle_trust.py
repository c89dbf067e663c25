"""A bundle is untrusted input: every kind of damage the loader once accepted (issue 31), one row
each, with the refusal it must give; and signed bundles."""
import hashlib
import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from hybrid.loader import BundleError, ManifestError, UntrustedBundle, load_bundle
from interop.targets.arch import shared_memory_limit
from scheduler.bundle import MANIFEST, SIGNATURE, read_bundle, write_bundle
from scheduler.manifest_schema import ISAS, elf_arch
from triton.backends.compiler import GPUTarget

OUTSIDE = b"\x7fELF outside the bundle"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _point_at(m, folder: Path, target: str, file: str, content: bytes) -> None:
    """The manifest's ``target`` names ``file``, with that content's sha256 (as an attacker would write)."""
    m["targets"][target].update(file=file, sha256=_sha(content))


def outside_relative(m, folder):
    (folder.parent / "x.cubin").write_bytes(OUTSIDE)
    _point_at(m, folder, "sm90a", "../x.cubin", OUTSIDE)


def outside_absolute(m, folder):
    _point_at(m, folder, "sm90a", "/etc/hostname", Path("/etc/hostname").read_bytes())


def symlink_out(m, folder):
    (folder.parent / "x.cubin").write_bytes(OUTSIDE)
    entry = m["targets"]["sm90a"]
    (folder / entry["file"]).unlink()
    (folder / entry["file"]).symlink_to(folder.parent / "x.cubin")
    entry["sha256"] = _sha(OUTSIDE)


def symlink_dev_zero(m, folder):
    entry = m["targets"]["sm90a"]
    (folder / entry["file"]).unlink()
    (folder / entry["file"]).symlink_to("/dev/zero")


def fifo(m, folder):
    entry = m["targets"]["sm90a"]
    (folder / entry["file"]).unlink()
    os.mkfifo(folder / entry["file"])


def folder_in_place(m, folder):
    entry = m["targets"]["sm90a"]
    (folder / entry["file"]).unlink()
    (folder / entry["file"]).mkdir()


def oversized(m, folder):
    entry = m["targets"]["sm90a"]
    with open(folder / entry["file"], "r+b") as f:
        f.truncate(300 << 20)   # sparse: 300 MiB that occupy no disk


def drop(*path):
    def damage(m, folder):
        node = m
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return damage


def setting(value, *path):
    def damage(m, folder):
        node = m
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return damage


def amd_relabelled(m, folder):
    """gfx942's code object listed as the sm90a binary, every field consistent with sm_90a."""
    m["targets"]["sm90a"] = {**m["targets"]["gfx942"], "isa": "sm_90a", "backend": "cuda", "warp_size": 32}


def sm80_relabelled(m, folder):
    m["targets"]["sm90a"] = {**m["targets"]["sm80"], "isa": "sm_90a"}


RAW = {  # damage to manifest.json's bytes
    "invalid JSON": lambda raw: raw[:-20],
    "deep nesting": lambda raw: b"[" * 100000 + b"]" * 100000,
    "not an object": lambda raw: b"[1, 2]",
    "huge manifest": lambda raw: raw[:-2] + b', "pad": "' + b"x" * (5 << 20) + b'"}',
}

DAMAGE = [  # (name, damage to the parsed manifest and folder, refusal)
    ("file ../x", outside_relative, r"'targets.sm90a.file' must be a file name in the bundle"),
    ("absolute file", outside_absolute, r"'targets.sm90a.file' must be a file name in the bundle"),
    ("symlink out", symlink_out, r"sm90a.cubin is a symbolic link"),
    ("symlink to /dev/zero", symlink_dev_zero, r"sm90a.cubin is a symbolic link"),
    ("FIFO in place of the binary", fifo, r"sm90a.cubin is not a regular file"),
    ("folder in place of the binary", folder_in_place, r"sm90a.cubin is not a regular file"),
    ("binary over the size limit", oversized, r"sm90a.cubin is 314572800 bytes, over the 268435456-byte limit"),
    ("no sha256", drop("targets", "sm90a", "sha256"), r"'targets.sm90a.sha256' must be 64 lowercase hex digits; "
                                                      r"it is missing"),
    ("no isa", drop("targets", "sm90a", "isa"), r"'targets.sm90a.isa' must be one of sm_80, .*; it is missing"),
    ("no targets", drop("targets"), r"'targets' must be an object \(\{...\}\); it is missing"),
    ("no kernel", drop("kernel"), r"'kernel' must be a Python identifier; it is missing"),
    ("no params", drop("params"), r"'params' must be a list of \{name, type\}; it is missing"),
    ("targets a list", setting(["sm90a"], "targets"), r"'targets' must be an object \(\{...\}\); got \['sm90a'\]"),
    ("num_warps 2**40", setting(2**40, "targets", "sm90a", "num_warps"),
     r"'targets.sm90a.num_warps' must be an integer from 1 to 32; got 1099511627776"),
    ("num_warps negative", setting(-4, "targets", "sm90a", "num_warps"), r"num_warps' must be an integer from 1 to 32"),
    ("num_warps a string", setting("4", "targets", "sm90a", "num_warps"), r"num_warps' must be an integer .*; got '4'"),
    ("num_warps true", setting(True, "targets", "sm90a", "num_warps"), r"num_warps' must be an integer .*; got True"),
    ("warp_size 0", setting(0, "targets", "sm90a", "warp_size"), r"'targets.sm90a.warp_size' must be an integer "
                                                                 r"from 32 to 32; got 0"),
    ("shared over the limit", setting(232449, "targets", "sm90a", "shared"),
     r"'targets.sm90a.shared' must be an integer from 0 to 232448"),
    ("unknown isa", setting("sm_75", "targets", "sm90a", "isa"), r"'targets.sm90a.isa' must be one of .*; got 'sm_75'"),
    ("backend not the isa's", setting("hip", "targets", "sm90a", "backend"), r"'targets.sm90a.backend' must be 'cuda'"),
    ("sha256 not hex", setting("zz", "targets", "sm90a", "sha256"), r"'targets.sm90a.sha256' must be 64 lowercase hex"),
    ("param not an object", setting(["x"], "params"), r"'params\[0\]' must be an object"),
    ("unknown format", setting(9, "format"), r"bundle format 9, this loader reads formats 1, 2"),
    ("AMD code object labelled sm_90a", amd_relabelled,
     r"is an AMD code object \(EM_AMDGPU\), but the manifest says isa sm_90a, which needs a CUDA cubin"),
    ("sm_80 cubin labelled sm_90a", sm80_relabelled, r"is built for sm_80, but the manifest says isa sm_90a"),
]


@pytest.fixture
def bundle(softmax_bundle, tmp_path) -> Path:
    return Path(shutil.copytree(softmax_bundle[1], tmp_path / "dist" / "softmax_kernel"))


def _edit(folder: Path, damage) -> None:
    m = json.loads((folder / MANIFEST).read_text())
    damage(m, folder)
    (folder / MANIFEST).write_text(json.dumps(m))


@pytest.mark.parametrize("name, damage, refusal", DAMAGE, ids=[row[0] for row in DAMAGE])
def test_damaged_bundle_is_refused(bundle, name, damage, refusal):
    _edit(bundle, damage)
    with pytest.raises(BundleError, match=refusal):
        load_bundle(bundle, arch="sm_90")


@pytest.mark.parametrize("name", RAW)
def test_damaged_manifest_bytes_are_refused(bundle, name):
    path = bundle / MANIFEST
    path.write_bytes(RAW[name](path.read_bytes()))
    refusal = {"invalid JSON": r"manifest.json is not valid JSON",
               "deep nesting": r"not valid JSON \(nested too deeply", "not an object": r"'\(top level\)' must be an object", "huge manifest": r"over the 4194304-byte limit"}
    with pytest.raises(BundleError, match=refusal[name]):
        load_bundle(bundle, arch="sm_90")


def test_manifest_errors_are_value_errors(bundle):
    """Callers that caught the old ValueError for a bad format keep working."""
    _edit(bundle, setting(9, "format"))
    with pytest.raises(ValueError):
        read_bundle(bundle)
    assert issubclass(ManifestError, BundleError)


def test_a_link_in_an_archive_is_refused(bundle, tmp_path):
    archive = tmp_path / "linked.zip"
    file = json.loads((bundle / MANIFEST).read_text())["targets"]["sm90a"]["file"]
    with zipfile.ZipFile(archive, "w") as zf:
        for p in bundle.iterdir():
            info = zipfile.ZipInfo(p.name)
            if p.name == file:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, p.read_bytes())
    with pytest.raises(BundleError, match="sm90a.cubin is not a regular file in the archive"):
        load_bundle(archive, arch="sm_90")
    assert load_bundle(archive, arch="sm_80").target == "sm80"


def test_every_binary_matches_its_isa(softmax_bundle):
    """The ELF decoding read off real binaries: cubins of CUDA's ELF ABI 7 (sm_80) and 8 (sm_90a)
    and an AMD code object."""
    for target, entry in read_bundle(softmax_bundle[1]).manifest["targets"].items():
        binary = (softmax_bundle[1] / entry["file"]).read_bytes()
        assert elf_arch(binary) == ISAS[entry["isa"]].arch, target


def test_the_newest_targets_binaries_match_their_isa(tmp_path):
    """sm100a (CUDA's ELF ABI 8, SM in bits 8-15) and gfx950, built for real."""
    import hybrid
    from scheduler import InlineExecutor, build, plan
    from scheduler.manifest_schema import check_binary

    results = build(plan([f"{Path(__file__).parent / 'editable_kernels.py'}:k_shift"], ["sm100a", "gfx950"]),
                    hybrid.compile, executor=InlineExecutor())
    for r in results:
        launch = r.entry.record["launch"]
        assert elf_arch(r.entry.binary) == ISAS[launch["isa"]].arch, r.job.target
        check_binary(r.entry.binary, {**launch, "file": r.job.target}, "built")
    with pytest.raises(BundleError, match="is built for gfx950, but the manifest says isa gfx942"):
        check_binary(results[1].entry.binary, {"isa": "gfx942", "file": "gfx950"}, "built")


def test_the_loader_limits_agree_with_the_compiler_table():
    for name, isa in ISAS.items():
        arch = isa.arch if isa.backend == "cuda" else name
        assert shared_memory_limit(GPUTarget(isa.backend, arch, isa.warp_size)) == isa.shared_limit, name


# -- signed bundles ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def signing():
    pytest.importorskip("cryptography", reason="signing needs the cryptography package")
    from scheduler import signing
    return signing


@pytest.fixture(scope="module")
def keys(signing, tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    return signing.generate(folder / "team.key"), signing.generate(folder / "other.key")


@pytest.mark.parametrize("archive", [False, True])
def test_a_signed_bundle_loads_with_its_key(signing, softmax_bundle, keys, tmp_path, archive):
    (private, public), _ = keys
    path = write_bundle(softmax_bundle[0], tmp_path / "softmax_kernel", archive, signing.private_key(private))
    kernel = load_bundle(path, arch="sm_90", trusted_keys=[public])
    assert kernel.target == "sm90a"
    assert read_bundle(path, [public]).signer == signing.fingerprint(signing.public_key(public))


def edited_binary(folder):
    """A binary edited and its sha256 recomputed in the manifest: passes every check but the signature."""
    m = json.loads((folder / MANIFEST).read_text())
    entry = m["targets"]["sm90a"]
    binary = bytearray((folder / entry["file"]).read_bytes())
    binary[-1] ^= 1
    (folder / entry["file"]).write_bytes(bytes(binary))
    entry["sha256"] = _sha(bytes(binary))
    (folder / MANIFEST).write_text(json.dumps(m, indent=1) + "\n")


def edited_manifest(folder):
    m = json.loads((folder / MANIFEST).read_text())
    m["targets"]["sm90a"]["num_warps"] = 8
    (folder / MANIFEST).write_text(json.dumps(m, indent=1) + "\n")


SIGNED_DAMAGE = [
    ("unsigned", lambda folder: (folder / SIGNATURE).unlink(), r"the bundle is not signed"),
    ("binary edited, hash recomputed", edited_binary, r"the bundle was edited after it was signed"),
    ("manifest edited", edited_manifest, r"the bundle was edited after it was signed"),
    ("signature garbage", lambda folder: (folder / SIGNATURE).write_bytes(b"{"), r"is not a signature file"),
]


@pytest.mark.parametrize("name, damage, refusal", SIGNED_DAMAGE, ids=[row[0] for row in SIGNED_DAMAGE])
def test_a_changed_signed_bundle_is_refused(signing, softmax_bundle, keys, tmp_path, name, damage, refusal):
    (private, public), _ = keys
    folder = write_bundle(softmax_bundle[0], tmp_path / "softmax_kernel", key=signing.private_key(private))
    damage(folder)
    with pytest.raises(UntrustedBundle, match=refusal):
        load_bundle(folder, arch="sm_90", trusted_keys=[public])
    if name == "binary edited, hash recomputed":   # what integrity alone cannot see
        assert load_bundle(folder, arch="sm_90").target == "sm90a"


def test_a_bundle_signed_by_another_key_is_refused(signing, softmax_bundle, keys, tmp_path):
    (_, public), (other, _) = keys
    folder = write_bundle(softmax_bundle[0], tmp_path / "softmax_kernel", key=signing.private_key(other))
    with pytest.raises(UntrustedBundle, match=r"signed by key [0-9a-f]{16}\.\.\., which is not among the trusted"):
        load_bundle(folder, arch="sm_90", trusted_keys=[public])


def test_a_rebuilt_unsigned_bundle_drops_the_old_signature(signing, softmax_bundle, keys, tmp_path):
    (private, public), _ = keys
    write_bundle(softmax_bundle[0], tmp_path / "softmax_kernel", key=signing.private_key(private))
    folder = write_bundle(softmax_bundle[0], tmp_path / "softmax_kernel")
    assert not (folder / SIGNATURE).exists()


def test_key_files_are_checked(signing, keys, tmp_path):
    (private, public), _ = keys
    with pytest.raises(ValueError, match="not a PEM private key"):
        signing.private_key(public)
    (tmp_path / "junk").write_text("junk")
    with pytest.raises(ValueError, match="junk: not a PEM public key"):
        signing.public_key(tmp_path / "junk")
    with pytest.raises(ValueError, match="cannot read key file"):
        signing.private_key(tmp_path / "missing")
    assert oct(private.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(FileExistsError):
        signing.generate(private)   # never overwrites a key
