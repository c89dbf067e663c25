"""triton-hybrid: one kernel, Triton and Gluon regions, one fused binary per GPU target."""
from interop.boundary import Boundary
from interop.errors import RegionError
from interop.handoff import shared, takes
from interop.setting import boundary_mode
from interop.stage import stage

from .compile import FusedBinary, compile
from .jit import jit
from .targets import TARGETS


def interpreting(target: str | None = None):
    """Run ``@hybrid.jit`` launches on the CPU in this ``with`` block (``interpret`` package)."""
    from interpret import interpreting as switch
    return switch(target)


def load_bundle(path, **kwargs):
    """``hybrid.loader.load_bundle``: imported on first use, so that ``import hybrid`` does not
    need cffi (GPU images may lack it; only launching from a bundle does)."""
    from .loader import load_bundle as load
    return load(path, **kwargs)


__all__ = ["Boundary", "FusedBinary", "RegionError", "TARGETS", "boundary_mode", "compile", "interpreting", "jit",
           "load_bundle", "shared", "stage", "takes"]
