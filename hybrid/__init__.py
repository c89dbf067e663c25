"""triton-hybrid: one kernel, Triton and Gluon regions, one fused binary per GPU target."""
from interop.boundary import Boundary
from interop.errors import RegionError

from .compile import FusedBinary, compile
from .jit import jit
from .loader import load_bundle
from .targets import TARGETS

__all__ = ["Boundary", "FusedBinary", "RegionError", "TARGETS", "compile", "jit", "load_bundle"]
