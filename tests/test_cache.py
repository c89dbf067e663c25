"""The build cache: keys, invalidation by source edits, atomic writes, damaged entries."""
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hybrid
from scheduler import Cache, InlineExecutor, build, plan
from scheduler.cache import CorruptEntry, Entry, job_key
from scheduler.planning import resolve

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def kernels(tmp_path) -> Path:
    """A private copy of tests/editable_kernels.py that a test may edit."""
    path = tmp_path / "kern.py"
    shutil.copy(ROOT / "tests" / "editable_kernels.py", path)
    return path


def key(ref: str, target: str = "sm80", **kwargs) -> str:
    return job_key(resolve(plan([ref], [target], **kwargs)[0]))


def test_key_covers_specialization_options_and_target(kernels):
    ref = f"{kernels}:k_scale"
    base = key(ref)
    assert key(ref) == base
    variants = [key(ref, "sm90a"), key(ref, options={"num_warps": 8}), key(ref, constexprs={"BLOCK": 512}),
                key(ref, signature={"n": "i64"}), key(f"{kernels}:k_shift")]
    assert len({base, *variants}) == len(variants) + 1


def test_editing_a_helper_rebuilds_only_the_kernels_that_reach_it(kernels, tmp_path):
    cache, jobs = Cache(tmp_path / "cache"), plan([f"{kernels}:k_scale", f"{kernels}:k_shift"], ["sm80"])
    first = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())
    assert [r.status for r in first] == ["built", "built"]
    warm = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())
    assert [r.status for r in warm] == ["cached", "cached"]
    source = kernels.read_text()
    kernels.write_text(source.replace("return x * 2.0", "return x * 3.0"))   # same lines: only h_scale changes
    after = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())
    assert [r.status for r in after] == ["built", "cached"]
    assert after[0].key != first[0].key and after[0].entry.binary != first[0].entry.binary
    assert after[1].key == first[1].key


def test_damaged_entries_are_detected_and_rebuilt(kernels, tmp_path):
    cache, jobs = Cache(tmp_path / "cache"), plan([f"{kernels}:k_shift"], ["gfx942"])
    good = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())[0]
    path = cache.path(good.key)
    intact = path.read_bytes()
    damages = {"truncated": intact[:len(intact) // 2], "flipped": intact.replace(b'"binary":"f', b'"binary":"g', 1),
               "not json": b"\x00garbage", "other key": intact.replace(good.key.encode(), b"0" * 64)}
    assert damages["flipped"] != intact
    for damaged in damages.values():
        path.write_bytes(damaged)
        with pytest.raises(CorruptEntry):
            cache.get(good.key)
        assert not path.exists()   # removed, so the next build writes a good one
    path.write_bytes(intact[:-10])
    again = build(jobs, hybrid.compile, cache=cache, executor=InlineExecutor())[0]
    assert again.status == "rebuilt" and "damaged cache entry" in again.note
    assert cache.get(good.key).binary == good.entry.binary


def test_readers_never_see_a_partial_entry(tmp_path):
    cache, stop, seen, damaged = Cache(tmp_path), threading.Event(), [], []
    entries = [Entry("ab" * 32, {"sha256": str(i)}, bytes([i]) * (1 << 20)) for i in range(3)]

    def write(entry):
        while not stop.is_set():
            cache.put(entry)

    writers = [threading.Thread(target=write, args=(e, )) for e in entries]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 20
    try:
        while len(seen) < 20 and time.monotonic() < deadline:
            try:
                got = cache.get(entries[0].key)
            except CorruptEntry as exc:
                damaged.append(exc)
                continue
            if got is not None:
                seen.append(got.record["sha256"])
                assert got.binary == entries[int(got.record["sha256"])].binary
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert not damaged and len(seen) >= 20
    assert [p.name for p in cache.path(entries[0].key).parent.iterdir()] == [cache.path(entries[0].key).name]


def test_a_crashed_write_leaves_no_entry(tmp_path, monkeypatch):
    cache, entry = Cache(tmp_path), Entry("cd" * 32, {"sha256": "x"}, b"binary")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk gone")))
    with pytest.raises(OSError):
        cache.put(entry)
    monkeypatch.undo()
    assert cache.get(entry.key) is None and list(cache.path(entry.key).parent.iterdir()) == []
    (cache.path(entry.key).parent / ".tmp-killed.json").write_bytes(b'{"format": 1, "key"')   # a writer killed mid-write
    assert cache.get(entry.key) is None


BUILDER = """
import sys
import hybrid
from scheduler import Cache, InlineExecutor, build, plan
results = build(plan([sys.argv[2] + ":k_scale"], ["sm80", "gfx942"]), hybrid.compile, cache=Cache(sys.argv[1]),
                executor=InlineExecutor())
print(" ".join(r.status + ":" + (r.entry.sha256 if r.ok else r.error) for r in results))
"""


@pytest.mark.slow
def test_two_concurrent_builders_share_one_cache(kernels, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_ALWAYS_COMPILE": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(tmp_path / "cache"), str(kernels)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    lines = [o[0].split() for o in outs]
    assert lines[0] == lines[1] or [s.split(":")[1] for s in lines[0]] == [s.split(":")[1] for s in lines[1]]
    cache = Cache(tmp_path / "cache")
    entries = sorted(p for p in (tmp_path / "cache" / "jobs").rglob("*") if p.is_file())
    assert len(entries) == 2 and not any(p.name.startswith(".tmp-") for p in entries)
    assert list((tmp_path / "cache" / "regions").rglob("*.json"))   # the region cache moved with the job cache
    assert {cache.get(p.stem).sha256 for p in entries} == {s.split(":")[1] for s in lines[0]}
