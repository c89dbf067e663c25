"""Both caches hold up against damage (issue 31): one row per kind, each detected, removed and
rebuilt without a crash; and a parallel build killed at random leaves only whole entries."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hybrid
from interop import cache_entries, caches
from interop.lowering import lowering_cache
from scheduler import Cache, InlineExecutor, build, plan
from tests.test_compile_time import _build

ROOT = Path(__file__).resolve().parents[1]
EDITABLE = ROOT / "tests" / "editable_kernels.py"


def _fields(path: Path) -> dict:
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if k not in ("format", "key", "checksum")}


def rewritten(**changes):
    """An entry whose fields are changed and whose checksum is recomputed: past the checksum, the
    content itself must be checked."""
    def damage(path: Path):
        cache_entries.write(path, path.stem, 1, {**_fields(path), **changes})
    return damage


def edited(old: bytes, new: bytes):
    def damage(path: Path):
        raw = path.read_bytes()
        assert old in raw
        path.write_bytes(raw.replace(old, new, 1))
    return damage


def folder(path: Path):
    path.unlink()
    (path / "inside").mkdir(parents=True)


def dev_zero(path: Path):
    path.unlink()
    path.symlink_to("/dev/zero")


def fifo(path: Path):
    path.unlink()
    os.mkfifo(path)


COMMON = [("a folder in its place", folder), ("a link to /dev/zero", dev_zero), ("a FIFO in its place", fifo),
          ("truncated", lambda p: p.write_bytes(p.read_bytes()[:100])), ("not JSON", lambda p: p.write_bytes(b"\x00")),
          ("deep nesting", lambda p: p.write_bytes(b"[" * 100000 + b"]" * 100000)),
          ("written for another key", lambda p: cache_entries.write(p, "0" * 64, 1, _fields(p)))]

REGION_DAMAGE = COMMON + [
    ("a constant edited", edited(b"2.000000e+00", b"3.000000e+00")),
    ("empty module text", rewritten(text="")),
    ("a module without the region", rewritten(text="module {\n}\n")),
    ("a module that does not parse", rewritten(text="module {\n  tt.func @hybrid_region(\n")),
    ("ret_type not a dtype", rewritten(ret_type={"block": {"dtype": "not_a_dtype"}, "shape": [512]})),
    ("ret_type garbage", rewritten(ret_type=[1, 2])),
    ("leaf_is_tensor garbage", rewritten(leaf_is_tensor=["x"])),
    ("more tensor leaves than inputs", rewritten(leaf_is_tensor=[True, True, True])),
    ("host types of another call", rewritten(host_types=["tensor<16xf32>"])),
]

JOB_DAMAGE = COMMON + [
    ("a record field edited", edited(b'"kernel":"k_shift"', b'"kernel":"k_shiff"')),
    ("binary not base64", rewritten(binary="!!")),
    ("record not an object", rewritten(record=[1])),
]


@pytest.mark.parametrize("name, damage", REGION_DAMAGE, ids=[row[0] for row in REGION_DAMAGE])
def test_a_damaged_region_entry_is_lowered_again(cold_caches, name, damage):
    cold = _build()
    (path, ) = cold_caches.glob("regions/*/*.json")
    intact = path.read_bytes()
    damage(path)
    caches.clear()
    again = _build()
    # the first call site lowered afresh (the entry refused), the second served from memory
    assert again.timing.hits.get("Triton region lowering") == 1, name
    assert again.binary == cold.binary
    assert path.is_file() and path.read_bytes() == intact   # rewritten whole
    assert cache_entries.read(path, path.stem, lowering_cache.FORMAT)


@pytest.mark.parametrize("name, damage", JOB_DAMAGE, ids=[row[0] for row in JOB_DAMAGE])
def test_a_damaged_job_entry_is_rebuilt(tmp_path, name, damage):
    cache, jobs = Cache(tmp_path / "cache"), plan([f"{EDITABLE}:k_shift"], ["gfx942"])
    good = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())[0]
    damage(cache.path(good.key))
    again = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())[0]
    assert again.ok and again.status == "rebuilt" and "damaged cache entry replaced" in again.note, again.error
    assert again.entry.binary == good.entry.binary and cache.get(good.key).binary == good.entry.binary


def test_a_cache_root_moves_both_caches(tmp_path):
    with caches.using_root(tmp_path / "a"):
        assert caches.default_root() == tmp_path / "a" and Cache().root == tmp_path / "a"
        with caches.using_root(None):
            assert caches.default_root() == tmp_path / "a"
    assert caches.default_root() == Path(os.environ["HYBRID_CACHE_DIR"])


# -- killed builds -----------------------------------------------------------------------------------
BUILDER = """
import sys
import hybrid
from scheduler import Cache, build, plan
refs = [sys.argv[2] + ":k_scale", sys.argv[2] + ":k_shift"]
jobs = [job for block in (64, 128, 256, 512, 1024) for job in plan(refs, ["sm80"], constexprs={"BLOCK": block})]
results = build(jobs, hybrid.compile, cache=Cache(sys.argv[1]), max_workers=2)
print(" ".join(r.status for r in results))
assert all(r.ok for r in results), [r.error for r in results]
"""


def _consistent(root: Path) -> int:
    """Every entry under ``root`` reads whole and verified; returns how many there are."""
    entries = [p for p in root.rglob("*.json") if not p.name.startswith(".tmp-")]
    for path in entries:
        fmt = lowering_cache.FORMAT if path.parts[-3] == "regions" else 1
        assert cache_entries.read(path, path.stem, fmt) is not None, path
    return len(entries)


@pytest.mark.slow
def test_a_parallel_build_killed_at_random_leaves_the_cache_consistent(tmp_path):
    """Ten small jobs on two workers; each round is killed (the builder and its workers,
    ``kill -9``) once a random number of its jobs (1 to 9) has reached the cache, so the kill
    lands mid-build however fast the machine or warm its caches. A round that finished anyway
    leaves its entries and the next one starts afresh."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_ALWAYS_COMPILE": "1"}
    root, rng, interrupted = tmp_path / "cache", random.Random(31), 0
    command = [sys.executable, "-c", BUILDER, str(root), str(EDITABLE)]
    for _ in range(4):
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        wanted, deadline = rng.randint(1, 9), time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline and \
                len(list((root / "jobs").rglob("*.json"))) < wanted:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        entries = _consistent(root / "jobs") if (root / "jobs").exists() else 0
        interrupted += entries < 10
        _consistent(root)
        if entries == 10:
            shutil.rmtree(root / "jobs")
    assert interrupted, "no round was killed mid-build: the test did not test anything"
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    statuses = done.stdout.split()
    assert len(statuses) == 10 and set(statuses) <= {"cached", "built"}, statuses
    assert _consistent(root / "jobs") == 10 and _consistent(root / "regions") >= 1


def test_a_cache_hit_reports_the_callers_own_call_sites(tmp_path):
    """Two checkouts of the same kernel: the second is served the first's binary from Triton's
    cache (keyed by source, not path), and still reports its own files."""
    from scheduler.planning import resolve
    sites = {}
    for clone in ("first", "second"):
        (tmp_path / clone).mkdir()
        path = tmp_path / clone / "kern.py"
        path.write_text(EDITABLE.read_text().replace("x * 2.0", "x * 2.25"))   # a source no other test compiles
        spec = resolve(plan([f"{path}:k_scale"], ["sm80"])[0])
        fb = hybrid.compile(spec.fn, spec.signature, spec.constexprs, target="sm80")
        sites[clone] = (fb, {str(r.call_site.file) for r in fb.regions})
    fb, files = sites["second"]
    assert fb.timing.hits.get("triton") == 1   # served from the first checkout's build
    assert str(tmp_path / "first") in fb.asm["ttgir"]   # its line info names the first checkout
    assert files == {str(tmp_path / "second" / "kern.py")}
    assert sites["first"][1] == {str(tmp_path / "first" / "kern.py")}
