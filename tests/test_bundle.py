"""Bundles: manifest contents, files, archives; JSON and binaries only."""
import dataclasses
import hashlib
import json
import re
import shutil

import pytest

from examples import softmax
from interop.triton import compat
from scheduler.bundle import MANIFEST, manifest, read_bundle, write_bundle


def test_manifest_describes_every_target(softmax_bundle):
    results, path = softmax_bundle
    data = json.loads((path / MANIFEST).read_text())
    assert data["kernel"] == "softmax_kernel" and data["source"] == "examples.softmax:softmax_kernel"
    assert [(p["name"], p["type"]) for p in data["params"]] == list(softmax.SIGNATURE.items())
    assert data["triton_version"] == compat.TRITON_VERSION
    assert set(data["targets"]) == {"sm80", "sm90a", "gfx942"}
    for r in results:
        t = data["targets"][r.job.target]
        binary = (path / t["file"]).read_bytes()
        assert t["sha256"] == hashlib.sha256(binary).hexdigest() == r.entry.sha256
        assert binary[:4] == b"\x7fELF"   # cubin and hsaco are both ELF
        assert t["num_warps"] == 4 and t["shared"] == r.summary["shared_bytes"]
        assert t["registers"] > 0 and t["spills"] == 0
        assert t["constexprs"]["BM"] == softmax.BM and "BlockedLayout" in t["constexprs"]["L"]
        assert t["triton_version"] == compat.TRITON_VERSION
    assert (data["targets"]["sm80"]["isa"], data["targets"]["sm90a"]["isa"], data["targets"]["gfx942"]["isa"]) == (
        "sm_80", "sm_90a", "gfx942")
    assert data["targets"]["gfx942"]["warp_size"] == 64 and data["targets"]["sm80"]["warp_size"] == 32


def test_hidden_parameters_are_counted_from_the_binary(softmax_bundle):
    _, path = softmax_bundle
    data = read_bundle(path).manifest
    ptx = softmax.build("sm80").asm["ptx"]
    entry_params = re.search(r"\.entry\s+softmax_kernel\s*\((.*?)\)", ptx, re.S).group(1).count(".param")
    for t in data["targets"].values():
        assert t["entry_params"] == entry_params == len(data["params"]) + t["hidden_params"]


def test_bundle_holds_only_the_manifest_and_binaries(softmax_bundle):
    _, path = softmax_bundle
    data = read_bundle(path).manifest
    assert sorted(p.name for p in path.iterdir()) == sorted([MANIFEST] + [t["file"] for t in data["targets"].values()])


def test_archive_is_deterministic_and_reads_like_the_folder(softmax_bundle, tmp_path):
    results, path = softmax_bundle
    first = write_bundle(results, tmp_path / "a" / "softmax_kernel", archive=True)
    second = write_bundle(results, tmp_path / "b" / "softmax_kernel", archive=True)
    assert first.suffix == ".zip" and first.read_bytes() == second.read_bytes()
    archived, folder = read_bundle(first), read_bundle(path)
    assert archived.manifest == folder.manifest
    for t in folder.manifest["targets"].values():
        assert archived.read(t["file"]) == folder.read(t["file"])


def test_rewriting_a_bundle_drops_binaries_it_no_longer_lists(softmax_bundle, tmp_path):
    results, path = softmax_bundle
    copy = tmp_path / "softmax_kernel"
    shutil.copytree(path, copy)
    write_bundle(results[:1], copy)
    assert sorted(p.name for p in copy.iterdir()) == [MANIFEST, "softmax_kernel.sm80.cubin"]


def test_one_bundle_holds_one_kernel(softmax_bundle):
    results, _ = softmax_bundle
    other = dataclasses.replace(results[1], entry=dataclasses.replace(
        results[1].entry, record={**results[1].entry.record, "kernel": "other_kernel"}))
    with pytest.raises(ValueError, match="one kernel"):
        manifest([results[0], other])
    with pytest.raises(ValueError, match="same target"):
        manifest([results[0], results[0]])


def test_not_a_bundle(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a bundle"):
        read_bundle(tmp_path)
