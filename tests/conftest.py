import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
# A fresh Triton cache per run: the tests must exercise the compiler, not earlier results.
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="hybrid-test-cache-"))
os.environ.setdefault("HYBRID_CACHE_DIR", tempfile.mkdtemp(prefix="hybrid-test-builds-"))


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


def pytest_unconfigure(config):
    # Triton's code generators are reference cycles holding IR wrappers; collect them before
    # interpreter shutdown so nanobind does not report them as leaks after the summary line.
    import gc
    gc.collect()
