"""triton-hybrid: one kernel, Triton and Gluon regions, one fused binary per GPU target.

    @hybrid.jit                      # above @gluon.jit or @triton.jit: calls into the other
    @gluon.jit                       # language become regions, stitched into one kernel
    def kernel(...): ...

    fb = hybrid.compile(kernel, signature, constexprs, target="sm90a")   # no GPU needed
    print(fb.report())                                                   # per-region table
    with hybrid.interpreting(target="sm90a"):                            # run it on the CPU
        kernel[grid](x, y, ...)

API:
    jit               mark a @gluon.jit / @triton.jit kernel as mixed
    compile           build a mixed kernel for one target -> FusedBinary
    FusedBinary       asm per stage, binary, metadata, regions, boundaries, report()
    interpreting      run @hybrid.jit launches on the CPU in a ``with`` block
    load_bundle       launch a kernel built by ``hybrid build`` (no compiler, no Triton JIT)
    takes, shared     declare how a Gluon region takes its tensors (a layout, or shared memory)
    stage             a Triton region's result stored into shared memory for a Gluon kernel
    convert_in        a Gluon function's tensor argument in the layout it needs (made there, not
                      converted, where the caller made it from a constant or index arithmetic)
    caller_load       a Gluon function's load that a Triton caller issues before the call, where
                      its loop pipelines it (gl.load anywhere else)
    load_block, store_block
                      a block loaded or stored through a Triton kernel's tensor descriptor in a
                      Gluon function: by TMA on sm90a/sm100a, through pointers elsewhere
    PointerDescriptor what such a descriptor is in a Gluon function on sm80 and AMD
    boundary_mode     how boundaries are planned in a ``with`` block
    TARGETS           the targets: sm80, sm90a, sm100a, gfx942, gfx950 (a GPU's name, H100 or
                      MI300X, is taken for its target wherever a target is)
    Boundary          the record of one boundary (layouts, conversion, cost)
    RegionError       a region that cannot be built: names the function, call site, reason
    NoGPUError        a launch with no GPU here (says how to use the interpreter)
Submodules: hybrid.interpret (the CPU interpreter), hybrid.port (porting one function),
hybrid.amd (AMD scheduling hints: setprio, sched_barrier; buffer_load, buffer_store),
hybrid.profile (per-region GPU time), hybrid.cli (the ``hybrid`` command). README.md and docs/ have more.

Names are imported on first use, so that ``import hybrid.loader`` (launching from a bundle)
loads neither the compiler nor Triton's JIT; ``import hybrid`` alone loads nothing else.
"""
from __future__ import annotations

import importlib
import os

# Triton 3.9 warns on every compile while this is unset (its default, fusion on, is to change in
# 3.10). hybrid's builds and the bundles they make are specified with fusion on, as every
# Triton so far compiles by default; a user's own setting is kept.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

#: public name -> (module, attribute in it)
_EXPORTS = {
    "Boundary": ("interop.boundary", "Boundary"),
    "RegionError": ("interop.errors", "RegionError"),
    "shared": ("interop.boundaries.handoff", "shared"),
    "takes": ("interop.boundaries.handoff", "takes"),
    "boundary_mode": ("interop.setting", "boundary_mode"),
    "stage": ("interop.lowering.stage", "stage"),
    "convert_in": ("interop.lowering.convert_in", "convert_in"),
    "caller_load": ("interop.lowering.caller_loads", "caller_load"),
    "PointerDescriptor": ("interop.lowering.pointer_descriptors", "PointerDescriptor"),
    "load_block": ("interop.lowering.pointer_descriptors", "load_block"),
    "store_block": ("interop.lowering.pointer_descriptors", "store_block"),
    "TARGETS": ("interop.targets", "TARGETS"),
    "FusedBinary": ("hybrid.compiler", "FusedBinary"),
    "compile": ("hybrid.compiler", "compile"),
    "jit": ("hybrid.jit_functions", "jit"),
    "NoGPUError": ("hybrid.jit_functions", "NoGPUError"),
    "load_bundle": ("hybrid.loader", "load_bundle"),
}


def _version() -> str:
    from scheduler.version import project_version
    return project_version()


def __getattr__(name: str):
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
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


_LEFT_OUT = object()


def interpreting(target=_LEFT_OUT):
    """Run ``@hybrid.jit`` launches, and plain ``@triton.jit`` / ``@gluon.jit`` ones, on the CPU in
    this ``with`` block (``hybrid.interpret``), for ``target`` (left out: ``HYBRID_INTERPRET_TARGET``,
    the GPU here, else sm100a; ``None`` is refused)."""
    from hybrid.interpret import interpreting as switch
    return switch() if target is _LEFT_OUT else switch(target)


__all__ = sorted([*_EXPORTS, "interpreting"])


def __dir__() -> list[str]:
    """The API (``help(hybrid)``, completion), not only what has been imported so far."""
    return sorted({*globals(), *__all__, "__version__"})
