import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


def _fresh_dir(variable: str, prefix: str) -> None:
    """A fresh cache folder per run, unless one is given: the tests must exercise the compiler, not
    earlier results. The process that makes it (pytest's, whose xdist workers inherit it) removes
    it at exit; each run left about 100 MB behind before."""
    if variable not in os.environ:
        os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, os.environ[variable], ignore_errors=True)


_fresh_dir("TRITON_CACHE_DIR", "hybrid-test-cache-")
_fresh_dir("HYBRID_CACHE_DIR", "hybrid-test-builds-")


def has_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def softmax_bundle(tmp_path_factory):
    """The softmax example built in-process for sm80, sm90a and gfx942, as a bundle folder."""
    import hybrid
    from scheduler import InlineExecutor, build, plan
    from scheduler.bundle import write_bundles

    results = build(plan(["examples.softmax:softmax_kernel"], ["sm80", "sm90a", "gfx942"]), hybrid.compile,
                    executor=InlineExecutor())
    assert all(r.ok for r in results), [r.error for r in results]
    return results, write_bundles(results, tmp_path_factory.mktemp("bundles"))["softmax_kernel"]


@pytest.fixture
def cold_caches(tmp_path, monkeypatch):
    """Empty on-disk caches (under ``tmp_path``) and in-process ones; Triton compiles for real."""
    from interop import caches
    monkeypatch.setenv("HYBRID_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    caches.clear()
    yield tmp_path
    caches.clear()
