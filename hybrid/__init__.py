"""triton-hybrid: one kernel, Triton and Gluon regions, one fused binary per GPU target.

Names are imported on first use, so that ``import hybrid.loader`` (launching from a bundle)
loads neither the compiler nor Triton's JIT; ``import hybrid`` alone loads nothing else.
"""
from __future__ import annotations

import importlib

#: public name -> (module, attribute in it)
_EXPORTS = {
    "Boundary": ("interop.boundary", "Boundary"),
    "RegionError": ("interop.errors", "RegionError"),
    "shared": ("interop.handoff", "shared"),
    "takes": ("interop.handoff", "takes"),
    "boundary_mode": ("interop.setting", "boundary_mode"),
    "stage": ("interop.stage", "stage"),
    "TARGETS": ("interop.targets", "TARGETS"),
    "FusedBinary": ("hybrid.compiler", "FusedBinary"),
    "compile": ("hybrid.compiler", "compile"),
    "jit": ("hybrid.jit_functions", "jit"),
    "load_bundle": ("hybrid.loader", "load_bundle"),
}


def __getattr__(name: str):
    if name not in _EXPORTS:   # a submodule (``hybrid.interpret.launch``, ``hybrid.profile.profiling``)?
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
        raise AttributeError(f"module 'hybrid' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value   # later lookups skip this function
    return value


def interpreting(target: str | None = None):
    """Run ``@hybrid.jit`` launches on the CPU in this ``with`` block (``hybrid.interpret``)."""
    from hybrid.interpret import interpreting as switch
    return switch(target)


__all__ = sorted([*_EXPORTS, "interpreting"])
