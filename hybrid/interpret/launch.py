"""Launch a mixed (or pure) kernel in the interpreter: every program of the grid, in turn.

Tensors are copied to the host and back, as upstream's interpreter does, so a kernel written
for the GPU runs unchanged on CPU tensors (or on GPU tensors, through the copies).
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import threading
import traceback
from typing import Iterator

import numpy as np
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime import Autotuner, Heuristics, JITFunction

from interop.entry import request
from interop.errors import LayoutError, RegionError, SharedMemoryError, TargetError
from interop.targets import current_gpu_target, name_of
from interop.validate import check_constexpr_layouts
from interop.triton.frontend import mangle_type
from interop.triton import interpreter as upstream
from scheduler.grid import check_grid

from . import autotune, bounds, memory, numerics, patch
from . import program as prog
from . import tma
from .builder import HybridInterpreterBuilder
from .errors import INTERNAL_PATHS, InterpretError
from .program import Frame, Program

_switch: contextvars.ContextVar = contextvars.ContextVar("hybrid_interpret", default=None)
#: launch options of ``kernel[grid](...)`` that may also be kernel parameters of the same name
LAUNCH_OPTIONS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                  "launch_pdl", "debug", "sanitize_overflow")
#: warps per program when the launch names none, as Triton's JIT defaults
DEFAULT_NUM_WARPS = 4


def enabled() -> bool:
    """Whether ``kernel[grid](...)`` of a ``@hybrid.jit`` kernel runs in the interpreter:
    ``HYBRID_INTERPRET=1`` or inside ``interpreting()``."""
    switch = _switch.get()
    return switch is not None or os.environ.get("HYBRID_INTERPRET", "0") not in ("", "0")


def default_target() -> str:
    switch = _switch.get()
    if switch:
        return switch
    if os.environ.get("HYBRID_INTERPRET_TARGET"):
        return os.environ["HYBRID_INTERPRET_TARGET"]
    return current_gpu_target() or "sm100a"


class _DefaultTarget:
    """``target`` left out: ``default_target()``. An explicit ``target=None`` is refused, as
    ``hybrid.compile`` refuses it."""

    def __repr__(self) -> str:
        return "default_target()"


DEFAULT_TARGET = _DefaultTarget()


def interpreting(target: str | GPUTarget | _DefaultTarget = DEFAULT_TARGET) -> contextlib.AbstractContextManager:
    """Run ``@hybrid.jit`` launches in this block in the interpreter, checking layouts and
    ops against ``target`` (left out: ``HYBRID_INTERPRET_TARGET``, the GPU here, else sm100a).
    Plain ``@triton.jit`` and ``@gluon.jit`` kernels launched in the block run here too, as under
    ``TRITON_INTERPRET=1`` (``_route_plain_kernels``)."""
    if target is None:
        request.check_target(target)   # refused at the call: no launch in the block could run
    _route_plain_kernels()
    return _switched("" if target is DEFAULT_TARGET else target)


@contextlib.contextmanager
def _switched(target) -> Iterator[None]:
    token = _switch.set(target)
    try:
        yield
    finally:
        _switch.reset(token)


_routing = threading.Lock()


def _route_plain_kernels() -> None:
    """Wrap upstream's ``run`` of JIT, autotuned and heuristics kernels (once per process) so
    that ``kernel[grid](...)`` of a kernel not marked ``@hybrid.jit`` comes to ``launch`` while an
    ``interpreting()`` block is active in the launching context (an autotuned one runs the config
    ``autotune.py`` picks, timing nothing on a GPU); anywhere else it is upstream's launch,
    untouched. Upstream decides ``TRITON_INTERPRET`` when a kernel is decorated, so a block cannot
    switch it."""
    with _routing:
        for kind in (JITFunction, Autotuner, Heuristics):
            if not getattr(kind.run, "routes_to_interpreter", False):
                kind.run = _routed(kind.run)


def _routed(upstream_run):
    def run(self, *args, **kwargs):
        if _switch.get() is None:
            return upstream_run(self, *args, **kwargs)
        grid, warmup = kwargs.pop("grid"), kwargs.pop("warmup", False)
        if not warmup:
            launch(self, grid, *args, **kwargs)
        return None
    run.routes_to_interpreter = True
    return run


def launch(kernel, grid, *args, target: str | GPUTarget | _DefaultTarget = DEFAULT_TARGET, **kwargs) -> None:
    """Run ``kernel[grid](*args, **kwargs)`` in the interpreter (an autotuned kernel: ``autotune.py``)
    for ``target`` (left out: ``default_target()``)."""
    if autotune.is_wrapped(kernel):
        return autotune.launch_wrapped(launch, kernel, grid, args, kwargs, target)
    target = request.check_target(default_target() if target is DEFAULT_TARGET else target,
                                  request.check_kernel(kernel))
    # As Triton's JIT reads them: a launch option named like a kernel parameter (``num_warps``,
    # ``num_stages``) is both that parameter's argument and the launch option; any other keyword
    # must be an option of the target's backend (checked as hybrid.compile checks its options).
    options = request.check_options({k: v for k, v in kwargs.items()
                                     if k not in kernel.arg_names or k in LAUNCH_OPTIONS},
                                    target)
    kwargs = {k: v for k, v in kwargs.items() if k in kernel.arg_names}
    num_warps = options.get("num_warps") or DEFAULT_NUM_WARPS
    builder = HybridInterpreterBuilder(target, num_warps, options.get("num_ctas") or 1)
    constexprs = {kernel.arg_names[i] for i in kernel.constexprs}
    _check_arguments(kernel, inspect.getcallargs(kernel.fn, *args, **kwargs), constexprs, target, num_warps)
    executor = upstream.GridExecutor(kernel.fn, kernel.arg_names, grid)
    args_hst, kwargs_hst = upstream.host_arguments(executor, args, kwargs)
    language = patch.language_of(kernel)
    with patch.patched(), numerics.quiet():
        call_args = inspect.getcallargs(kernel.fn, *args_hst, **kwargs_hst)
        storages = bounds.Storages.of({name: value for name, value in call_args.items() if name not in constexprs})
        call_args = {name: value if name in constexprs else _device_value(name, value)
                     for name, value in call_args.items()}
        grid = check_grid(grid(call_args) if callable(grid) else grid, target.backend, target.warp_size * num_warps,
                          kernel.__name__)   # as the bundle loader checks it
        builder.set_grid_dim(*grid)
        fn = patch.rewritten(kernel)
        frame = Frame(language, patch.semantic_for(language, num_warps, builder), num_warps, "the program")
        for x in range(grid[0]):
            for y in range(grid[1]):
                for z in range(grid[2]):
                    builder.set_grid_idx(x, y, z)
                    program = Program(name_of(target), target.warp_size, num_warps, storages=storages,
                                      shared=memory.SharedBudget(kernel.__name__, target))
                    with prog.running(program), prog.frame(frame):
                        _run(fn, call_args, kernel.__name__, (x, y, z))
    upstream.restore_arguments(executor, args, args_hst, kwargs, kwargs_hst)


def _check_arguments(kernel, call_args: dict, constexprs: set, target, num_warps: int) -> None:
    """The launch's share of the request checks (``interop.entry.request``): constexpr layouts and
    values, and element types of tensor arguments the target lacks (fp8e4nv on sm80)."""
    check_constexpr_layouts(kernel, {(i, ): call_args[name] for i, name in enumerate(kernel.arg_names)
                                     if name in constexprs}, target.warp_size,
                            num_warps, f"{target.backend}:{target.arch}")   # as the compiler checks them
    for name, value in call_args.items():
        if name in constexprs:
            request.check_constexpr_value(name, value)
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            request.check_dtypes(kernel, {name: mangle_type(value)}, target)


def _device_value(name: str, value):
    if tma.is_host_descriptor(value):
        return tma.device_descriptor(value)
    if isinstance(value, float):   # an fp32 scalar, as the compiled kernel takes it (so `eps.to(tl.float32)` works)
        return tl.tensor(upstream.TensorHandle(np.array([value], dtype=np.float32), tl.float32), tl.float32)
    converted = upstream.implicit_cvt(value)
    if hasattr(value, "data_ptr"):   # a tensor's pointer: named in an out-of-bounds report
        bounds.mark_argument(converted.handle, name)
    return converted


def _run(fn, call_args: dict, name: str, pid: tuple) -> None:
    try:
        fn(**call_args)
    except (InterpretError, LayoutError, TargetError, RegionError, SharedMemoryError):
        raise
    except Exception as exc:   # upstream's front-end checks: say where, in the kernel's source
        site = _user_frame(exc)
        raise InterpretError(f"{site}: {type(exc).__name__}: {exc}\n  (interpreting {name}, program {pid})") from exc


def _user_frame(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(INTERNAL_PATHS)
              and not f.filename.startswith("<")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
