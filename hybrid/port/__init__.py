"""Porting a Triton kernel to Gluon one function at a time.

``start`` writes a first Gluon version of one ``@triton.jit`` function and a compare test;
``compare`` runs a kernel as written and with one of its Triton functions replaced by a candidate
(the compare half lives in ``hybrid/port/compare.py`` and is imported on first use).
"""
import importlib

from .errors import PortError
from .launch import Launch, capture_launch
from .scaffold import PortFiles, start

__all__ = ["Comparison", "Launch", "PortError", "PortFiles", "capture_launch", "compare", "start"]


def __getattr__(name: str):
    """``compare`` and ``Comparison`` from ``hybrid.port.compare``, when first asked for."""
    if name not in ("compare", "Comparison"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(f"{__name__}.compare")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.compare":
            raise
        raise ImportError(f"{__name__}.compare (the compare half of `hybrid port`) is not in this checkout") from exc
    # Importing the submodule bound the package attribute `compare` to it: bind the function instead.
    globals().update(compare=module.compare, Comparison=module.Comparison)
    return globals()[name]
