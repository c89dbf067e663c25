"""Signatures that bind (kernel, source, versions, the bundle's name), keys handled as ssh-keygen
and minisign handle them, the manifest held to what its binary declares, damaged archives: every
attack of ``bench/attack_cases.py`` refused cleanly; and what must still be accepted."""
import json
import shutil

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

from bench import attack_cases as ac
from examples import softmax
from hybrid import cli
from hybrid.loader import load_bundle
from scheduler.bundle import MANIFEST, read_bundle
from scheduler.kernel_elf import function_symbols, kernel_info
from scheduler.manifest_schema import PARAM_BYTES, param_bytes

pytest.importorskip("cryptography", reason="signing needs the cryptography package")

TARGETS = ["sm90a", "gfx942"]
FAST = ac.cases(TARGETS, slow=False)


@pytest.fixture(scope="module")
def arena(softmax_bundle, tmp_path_factory) -> ac.Arena:
    return ac.arena(TARGETS, tmp_path_factory.mktemp("arena"), softmax_bundle[0])


@pytest.mark.parametrize("case", FAST, ids=[f"{c.family}: {c.name}" for c in FAST])
def test_every_attack_is_refused_with_one_clear_line(arena, case):
    kind, message = ac.outcome(case, arena)
    assert kind == "refused", message


def test_build_sign_never_signs_a_planted_cache_entry(arena):
    """The cache entry's binary is replaced and its checksum recomputed; ``--sign`` builds from
    source and signs the genuine binary (before, it signed the planted one)."""
    (case, ) = [c for c in ac.SIGNING if c.slow]
    kind, message = ac.outcome(case, arena)
    assert kind == "refused", message


# -- what is still accepted --------------------------------------------------------------------------------
def test_the_manifest_names_what_the_signature_binds(arena):
    import hybrid
    from interop.triton import compat
    data = read_bundle(arena.bundle()).manifest
    assert data["format"] == 3 and data["kernel"] == "softmax_kernel"
    assert data["source_sha256"] == softmax.softmax_kernel.cache_key
    assert data["hybrid_version"] == hybrid.__version__ and data["triton_version"] == compat.TRITON_VERSION


@pytest.mark.parametrize("archive", [False, True])
def test_a_pinned_kernel_loads_by_name_or_jit_function(arena, archive):
    path = arena.bundle(archive=archive)
    for pin in ("softmax_kernel", softmax.softmax_kernel):
        assert arena.load(path, kernel=pin).manifest["kernel"] == "softmax_kernel"


def test_trusted_keys_take_a_path_pem_bytes_a_key_or_a_list_of_them(arena):
    from scheduler import signing
    public = signing.public_key(arena.public)
    forms = [str(arena.public), arena.public, arena.public.read_bytes(), public, signing.private_key(arena.private),
             [arena.public], (str(arena.public), public)]
    path = arena.bundle()
    for keys in forms:
        assert load_bundle(path, arch="sm_90a", trusted_keys=keys).target == "sm90a", keys


def test_keygen_force_replaces_a_planted_link_not_what_it_points_at(tmp_path):
    from scheduler import signing
    (tmp_path / "victim").write_text("keep me")
    (tmp_path / "team.key.pub").symlink_to(tmp_path / "victim")
    private, public = signing.generate(tmp_path / "team.key", force=True)
    assert (tmp_path / "victim").read_text() == "keep me" and not public.is_symlink()
    assert signing.public_key(public) is not None and oct(private.stat().st_mode & 0o777) == "0o600"


def test_cli_keygen_refuses_to_overwrite_unless_forced(tmp_path, capsys):
    key = str(tmp_path / "team.key")
    assert cli.main(["keygen", key]) == 0
    first = (tmp_path / "team.key").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["keygen", key])
    assert exit_info.value.code == 2 and "exists; a key is never overwritten" in capsys.readouterr().err
    assert (tmp_path / "team.key").read_bytes() == first
    assert cli.main(["keygen", key, "--force"]) == 0
    assert (tmp_path / "team.key").read_bytes() != first


def test_cli_build_refuses_a_private_key_others_can_read(tmp_path, capsys):
    from scheduler import signing
    private, _ = signing.generate(tmp_path / "team.key")
    private.chmod(0o640)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["build", ac.REF, "--target", "sm80", "--sign", str(private), "-o", str(tmp_path / "dist")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and f"run `chmod 600 {private}`" in err


# -- what the binaries declare -----------------------------------------------------------------------------
def test_each_binary_declares_the_manifests_parameters_and_threads(softmax_bundle):
    """Read off real binaries: a cubin of CUDA's ELF ABI 7 (sm_80) and 8 (sm_90a), a code object."""
    _, folder = softmax_bundle
    data = json.loads((folder / MANIFEST).read_text())
    for target, entry in data["targets"].items():
        binary = (folder / entry["file"]).read_bytes()
        info = kernel_info(binary, entry["name"])
        assert entry["name"] in function_symbols(binary), target
        assert info.param_sizes == (8, 8, 4, 4, 4, 8, 8), target   # x, y, n_rows, n_cols, stride; 2 scratch
        assert info.threads == entry["num_warps"] * entry["warp_size"] and info.cluster is None, target


def test_the_schema_knows_every_type_a_signature_may_use():
    from interop.entry.request import SCALAR_TYPES
    assert set(PARAM_BYTES) == set(SCALAR_TYPES)


def test_a_bundle_copied_under_its_own_name_still_loads(arena, tmp_path):
    """Moving a signed bundle is fine; only its name is bound."""
    moved = shutil.copytree(arena.bundle(), tmp_path / "elsewhere" / "softmax_kernel")
    assert arena.load(moved).target == "sm90a"


@triton.jit
def _every_scalar(out, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, N: tl.constexpr):
    tl.store(out + tl.arange(0, N), a0.to(tl.float32) + a15.to(tl.float32))


@pytest.mark.parametrize("target", [GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx942", 64)],
                         ids=["sm90", "gfx942"])
def test_the_schema_sizes_each_scalar_type_as_the_binary_lays_it_out(target):
    types = ["i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64",
             "fp8e4nv", "fp8e5"]
    signature = {"out": "*fp32", **{f"a{i}": t for i, t in enumerate(types)}, "N": "constexpr"}
    compiled = triton.compile(triton.compiler.ASTSource(_every_scalar, signature, constexprs={"N": 32}),
                              target=target)
    binary = compiled.asm["hsaco" if target.backend == "hip" else "cubin"]
    declared = kernel_info(binary, compiled.metadata.name).param_sizes
    hidden = (8, ) * (len(declared) - len(types) - 1)   # Triton's scratch pointers
    assert declared == (8, *(param_bytes(t) for t in types), *hidden)


def test_a_cluster_kernels_binary_declares_its_cluster_size():
    compiled = triton.compile(triton.compiler.ASTSource(_every_scalar, {"out": "*fp32", **{
        f"a{i}": "i32" for i in range(16)}, "N": "constexpr"}, constexprs={"N": 32}),
        target=GPUTarget("cuda", 90, 32), options={"num_ctas": 2})
    assert kernel_info(compiled.asm["cubin"], compiled.metadata.name).cluster == 2
