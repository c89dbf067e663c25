"""libdevice calls in the interpreter: computed where Triton's interpreter has numpy for them,
an ``UnsupportedOpError`` at the call for the rest; never a silent ``None``.

Kernel libraries call ``libdevice.rsqrt``, ``tanh``... either from ``tl.extra.libdevice``, whose
functions are stubs (``...``) that the compiler swaps for the target backend's module, so that
running their Python body returns ``None``; or from ``tl.extra.cuda`` / ``tl.extra.hip``'s
``libdevice``, whose ``extern_elementwise`` upstream's interpreter cannot run. Here a call runs
the backend's own function (for a stub: the target's backend, as the compiler does), so its
dtype checks and broadcasting are the compiler's; its extern call is then computed by the
interpreter builder's ``create_<name>`` where the function has a ``tl.math`` namesake that
Triton's interpreter computes with numpy (``rsqrt``, ``exp``, ``erf``, ``fma``...: ``MODELED``).
"""
from __future__ import annotations

import importlib
import threading
from types import ModuleType

import numpy as np
import triton.language as tl
from triton.language.extra import libdevice as libdevice_stubs

from interop.triton import interpreter as upstream

from . import program as prog
from .errors import UnsupportedOpError

STUBS = "triton.language.extra.libdevice"
#: backend of the compile target -> its libdevice module
BACKENDS = {"cuda": "triton.language.extra.cuda.libdevice", "hip": "triton.language.extra.hip.libdevice"}
#: libdevice functions the interpreter computes: those whose ``tl.math`` namesake Triton's
#: interpreter builder computes with numpy (``create_<name>``)
MODELED = frozenset(name for name in dir(tl.math) if not name.startswith("_") and hasattr(libdevice_stubs, name)
                    and callable(getattr(upstream.InterpreterBuilder, f"create_{name}", None)))

#: one-argument libdevice functions with no ``tl.math`` namesake that numpy computes (to within
#: libdevice's own ulps: ``__nv_tanhf`` and ``__ocml_tanh_f32`` are not correctly rounded either)
NUMPY = {"tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan, "atan": np.arctan, "asin": np.arcsin,
         "acos": np.arccos, "log1p": np.log1p, "expm1": np.expm1, "cbrt": np.cbrt}

_running = threading.local()   # the libdevice function whose extern call is being built, per thread


def modules() -> list[ModuleType]:
    """The stub module and the backends' libdevice modules this Triton has."""
    found = []
    for name in (STUBS, *BACKENDS.values()):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue
    return found


def is_libdevice(value) -> bool:
    return callable(value) and getattr(value, "__module__", None) in (STUBS, *BACKENDS.values())


_originals: dict[str, dict] = {}


def _original(module_name: str, name: str):
    """The function ``name`` of ``module_name`` as Triton defines it (not a stand-in)."""
    if module_name not in _originals:
        _originals[module_name] = dict(vars(importlib.import_module(module_name)))
    return _originals[module_name].get(name)


def stand_in(fn):
    """What the interpreter calls for the libdevice function ``fn``."""
    module_name, name = fn.__module__, fn.__name__
    _original(module_name, name)   # remember the module's functions before they are replaced

    def call(*args, **kwargs):
        kwargs.pop("_semantic", None)
        kwargs.pop("_generator", None)
        semantic = prog.current_frame().semantic
        backend = BACKENDS.get(semantic.builder.target.backend) if module_name == STUBS else module_name
        real = _original(backend, name) if backend else None
        if real is None:
            raise UnsupportedOpError(f"libdevice.{name}", f"the {semantic.builder.target.backend} backend's libdevice "
                                     f"has no '{name}', so the compiled kernel could not call it either")
        previous, _running.name = getattr(_running, "name", None), name
        try:
            return real(*args, _semantic=semantic, **kwargs)
        finally:
            _running.name = previous
    return call


def compute(builder, symbol: str, args: list):
    """The extern call ``symbol`` of the libdevice function being run, by the builder's numpy."""
    name = getattr(_running, "name", None)
    if name in NUMPY and len(args) == 1:
        return builder.unary_op(args[0], NUMPY[name])
    if name not in MODELED:
        raise UnsupportedOpError(f"libdevice.{name or symbol} ({symbol})",
                                 f"the interpreter computes only the libdevice functions Triton's interpreter has "
                                 f"numpy for ({', '.join(sorted(MODELED | set(NUMPY)))}); or write it with tl.math / tl.* functions")
    return getattr(builder, f"create_{name}")(*args)
