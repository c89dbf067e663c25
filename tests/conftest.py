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


#: The demo's test, which checks each example it builds in the interpreter on every target where there is no GPU.
DEMO_TEST = "tests/test_scheduler.py::test_demo_builds_every_example_for_every_target"
#: The test that checks every example in the interpreter on two targets, on every release (the demo's runs on 3.9 only).
EVERY_EXAMPLE_INTERPRETED = "tests/test_interpret.py::test_every_example_matches_torch_in_the_interpreter"


@pytest.hookimpl(trylast=True)   # after -k and -m deselected theirs
def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
    if any(item.nodeid == DEMO_TEST for item in items):
        from examples.run import EXAMPLES
        in_demo = {module.rpartition(".")[2] for module in EXAMPLES}
        demo_checks = pytest.mark.skip(reason=f"{DEMO_TEST} checks this example in the interpreter on every target")
        for item in items:
            if item.nodeid.partition("[")[0] == EVERY_EXAMPLE_INTERPRETED and item.callspec.params["name"] in in_demo:
                item.add_marker(demo_checks)


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
