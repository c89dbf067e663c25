"""triton-hybrid: one kernel, Triton and Gluon regions, one fused binary per GPU target."""
from interop.boundary import Boundary
from interop.errors import RegionError

from .compile import FusedBinary, compile
from .jit import jit
from .targets import TARGETS


def load_bundle(path, **kwargs):
    """``hybrid.loader.load_bundle``: imported on first use, so that ``import hybrid`` does not
    need cffi (GPU images may lack it; only launching from a bundle does)."""
    from .loader import load_bundle as load
    return load(path, **kwargs)


__all__ = ["Boundary", "FusedBinary", "RegionError", "TARGETS", "compile", "jit", "load_bundle"]
