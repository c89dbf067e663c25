"""Build artifacts are right: one launch record whatever the path, keys that see every input,
bundles replaced atomically, a cache that cannot keep an entry costing no binary."""
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import triton

import hybrid
from hybrid import cli
from hybrid.loader import ffi, load_bundle
from interop.triton import compat
from scheduler import Cache, InlineExecutor, build, plan
from scheduler import bundle as bundles
from scheduler import cache as job_cache
from scheduler.bundle import MANIFEST, read_bundle, write_bundle, write_bundles
from scheduler.planning import resolve

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "record_kernels.py"
MIXED = f"{KERNELS}:k_mixed"
TARGETS = ["sm80", "gfx942"]

# A parallel build (two workers) that kills itself and its workers (``kill -9``) once its first
# result is in the cache: the next build mixes a cached record with a fresh one.
KILLED = """
import os, signal, sys
import hybrid
from scheduler import Cache, build, plan
build(plan([sys.argv[2]], sys.argv[3].split(",")), hybrid.compile, cache=Cache(sys.argv[1]), max_workers=2,
      on_result=lambda result: os.killpg(0, signal.SIGKILL))
"""


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """``k_mixed`` built afresh, in-process, for ``TARGETS``; its cache's root."""
    root = tmp_path_factory.mktemp("cold") / "cache"
    results = build(plan([MIXED], TARGETS), hybrid.compile, cache=Cache(root), executor=InlineExecutor())
    assert [r.status for r in results] == ["built", "built"], [r.error for r in results]
    return results, root


def packed(bundle: Path) -> bytes:
    """The bytes ``k_mixed(a, d, c)`` passes for its parameters, as the loader packs them."""
    kernel = load_bundle(bundle, arch="sm_80")
    return b"".join(ffi.buffer(value)[:] for value in kernel.pack((0x7F00_0000_1000, 1 << 40, 5)))


@pytest.mark.slow
def test_a_bundle_is_the_same_fresh_cached_parallel_or_after_a_killed_build(cold, tmp_path):
    results, root = cold
    fresh = write_bundles(results, tmp_path / "fresh")["k_mixed"]
    warm = build(plan([MIXED], TARGETS), hybrid.compile, cache=Cache(root), executor=InlineExecutor())
    assert [r.status for r in warm] == ["cached", "cached"]
    cached = write_bundles(warm, tmp_path / "cached")["k_mixed"]

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = tmp_path / "killed-cache"
    proc = subprocess.run([sys.executable, "-c", KILLED, str(killed), MIXED, ",".join(TARGETS)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, start_new_session=True)
    assert proc.returncode == -9 and len(list(killed.glob("jobs/*/*.json"))) == 1, proc.stderr[-2000:]
    cli_run = subprocess.run([sys.executable, "-m", "hybrid.cli", "build", MIXED, "--targets", ",".join(TARGETS),
                              "--cache-dir", str(killed), "-o", str(tmp_path / "cli")],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert cli_run.returncode == 0, cli_run.stderr[-2000:]
    assert "cached" in cli_run.stdout and "built" in cli_run.stdout, cli_run.stdout   # one of each

    manifests = {name: (path / MANIFEST).read_bytes() for name, path in
                 (("fresh", fresh), ("cached", cached), ("after a killed build, from the CLI", tmp_path / "cli/k_mixed"))}
    assert len(set(manifests.values())) == 1, manifests
    params = read_bundle(fresh).manifest["params"]
    assert [(p["name"], p["type"]) for p in params] == [("a_ptr", "*fp32"), ("d", "i64"), ("c", "i32")]
    expected = (0x7F00_0000_1000).to_bytes(8, "little") + (1 << 40).to_bytes(8, "little") + (5).to_bytes(4, "little")
    assert {packed(fresh), packed(cached), packed(tmp_path / "cli/k_mixed")} == {expected}


# -- keys -------------------------------------------------------------------------------------------
def key(ref: str) -> str:
    return job_cache.job_key(resolve(plan([ref], ["sm80"])[0]))


def edit_source(old: str, new: str):
    def edit(path: Path, monkeypatch):
        source = path.read_text()
        assert old in source
        path.write_text(source.replace(old, new, 1))
    return edit


def edit_file(path: Path, stamp):
    """``path`` reads as edited, and ``stamp`` (a once-per-process hash over it) is taken afresh."""
    def edit(_, monkeypatch):
        target, read = path.resolve(), Path.read_bytes
        assert target.is_file()
        monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"\n# edited\n" if p.resolve() == target else b""))
        stamp.cache_clear()
    return edit


def set_env(name: str, value: str):
    def edit(path: Path, monkeypatch):
        monkeypatch.setenv(name, value)
    return edit


EDITS = [  # (what changes, how)
    ("a JIT function passed as a constexpr", edit_source("return h_offset(x) * 2.0", "return h_offset(x) * 3.0")),
    ("a function the passed one calls", edit_source("return x + 1.0", "return x + 4.0")),
    ("the stitcher (interop/)", edit_file(ROOT / "interop/caches.py", job_cache.code_stamp)),
    ("launch records (scheduler/)", edit_file(ROOT / "scheduler/resources.py", job_cache.code_stamp)),
    ("the front end (hybrid/)", edit_file(ROOT / "hybrid/compiler.py", job_cache.code_stamp)),
    ("Triton itself, same version", edit_file(Path(triton.__file__).parent / "compiler/compiler.py", compat.triton_stamp)),
    ("TRITON_DEFAULT_FP_FUSION", set_env("TRITON_DEFAULT_FP_FUSION", "0")),
]


@pytest.mark.parametrize("name, edit", EDITS, ids=[row[0] for row in EDITS])
def test_the_key_sees_every_input(tmp_path, monkeypatch, name, edit):
    path = tmp_path / "kern.py"
    shutil.copy(KERNELS, path)
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    before = key(f"{path}:k_apply")
    assert key(f"{path}:k_apply") == before
    try:
        edit(path, monkeypatch)
        assert key(f"{path}:k_apply") != before, name
    finally:
        monkeypatch.undo()
        job_cache.code_stamp.cache_clear()
        compat.triton_stamp.cache_clear()


# -- writing bundles --------------------------------------------------------------------------------
def fail_second(monkeypatch, owner, name: str):
    """``owner.name``'s second call raises ENOSPC (a disk that fills midway)."""
    original, calls = getattr(owner, name), []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, failing)


def fail_first(monkeypatch, owner, name: str):
    """``owner.name`` raises ENOSPC."""
    def failing(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(owner, name, failing)


def test_a_folder_is_swapped_in_one_step_where_the_system_can(cold, tmp_path, monkeypatch):
    """The swap leaves no moment without a bundle at its path: on Linux one ``renameat2``
    exchange, and no rename that takes the old bundle away first."""
    results, _ = cold
    path = write_bundle(results[:1], tmp_path / "k_mixed")
    monkeypatch.setattr(os, "rename", lambda *a: pytest.fail("renamed the old bundle away"))
    write_bundle(results, path)
    assert list(read_bundle(path).manifest["targets"]) == TARGETS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k_mixed"]


def contents(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


FAILURES = [  # (bundle kind, where the rewrite fails)
    ("folder", "writing its second file", lambda mp: fail_second(mp, bundles, "_write_file")),
    ("folder", "swapping the new folder into place", lambda mp: fail_first(mp, bundles, "_exchange")),
    ("folder", "renaming the new folder into place, where no swap is had",
     lambda mp: (mp.setattr(bundles, "_exchange", lambda a, b: False), fail_second(mp, os, "rename"))),
    ("archive", "writing its second member", lambda mp: fail_second(mp, zipfile.ZipFile, "writestr")),
]


@pytest.mark.parametrize("kind, where, failure", FAILURES, ids=[f"{row[0]}, {row[1]}" for row in FAILURES])
def test_a_rewrite_that_fails_leaves_the_old_bundle_loadable(cold, tmp_path, monkeypatch, kind, where, failure):
    results, _ = cold
    path = write_bundle(results[:1], tmp_path / "k_mixed", archive=kind == "archive")
    old = contents(tmp_path)
    with monkeypatch.context() as patch:
        failure(patch)
        with pytest.raises(OSError, match="No space left"):
            write_bundle(results, tmp_path / "k_mixed", archive=kind == "archive")
    assert contents(tmp_path) == old, where   # the old bundle as it was, nothing left beside it
    bundle = read_bundle(path)
    assert list(bundle.manifest["targets"]) == ["sm80"]
    entry = bundle.manifest["targets"]["sm80"]
    assert hashlib.sha256(bundle.read(entry["file"])).hexdigest() == entry["sha256"]
    assert write_bundle(results, tmp_path / "k_mixed", archive=kind == "archive") == path   # and then it succeeds
    assert list(read_bundle(path).manifest["targets"]) == TARGETS


def test_a_bundle_folder_holding_other_files_is_not_replaced(cold, tmp_path):
    results, _ = cold
    path = write_bundle(results[:1], tmp_path / "k_mixed")
    (path / "notes.txt").write_text("mine")
    with pytest.raises(bundles.BundleError, match="notes.txt, which no bundle holds"):
        write_bundle(results, path)
    assert (path / "notes.txt").read_text() == "mine" and list(read_bundle(path).manifest["targets"]) == ["sm80"]


def test_a_cache_that_cannot_keep_a_build_still_yields_the_bundle(tmp_path, monkeypatch, capsys):
    def full(self, entry):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Cache, "put", full)
    results = build(plan([MIXED], ["sm80"]), hybrid.compile, cache=Cache(tmp_path / "cache"), executor=InlineExecutor())
    assert results[0].ok and results[0].status == "built"
    assert "not kept in the cache" in results[0].note and "No space left" in results[0].note
    monkeypatch.setattr(sys, "argv", ["hybrid"])
    assert cli.main(["build", MIXED, "--target", "sm80", "--cache-dir", str(tmp_path / "cache"), "-j", "1",
                     "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert out.count("not kept in the cache") == 1, out
    assert list(read_bundle(tmp_path / "out" / "k_mixed").manifest["targets"]) == ["sm80"]


@pytest.mark.parametrize("targets", ["", " , "])
def test_an_empty_target_list_is_refused(targets, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["build", MIXED, "--targets", targets])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("hybrid: error: no target given; expected 'all' or some of") and err.count("\n") == 1, err
