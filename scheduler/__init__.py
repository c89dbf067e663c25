"""One fused binary per (kernel, specialization, target): planning, parallel builds, a
content-addressed cache and bundles for the runtime loader (``hybrid.load_bundle``).

Names are imported on first use: ``scheduler.bundle`` (read by the loader) needs no compiler.
"""
from __future__ import annotations

import importlib

#: public name -> its module
_EXPORTS = {"BuildResult": "scheduler.builds", "InlineExecutor": "scheduler.builds", "build": "scheduler.builds",
            "Cache": "scheduler.cache", "Job": "scheduler.planning", "plan": "scheduler.planning"}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


__all__ = sorted(_EXPORTS)
