"""Launch a mixed (or pure) kernel in the interpreter: every program of the grid, in turn.

Tensors are copied to the host and back, as upstream's interpreter does, so a kernel written
for the GPU runs unchanged on CPU tensors (or on GPU tensors, through the copies).
"""
from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import traceback
from typing import Iterator

import numpy as np
import triton.language as tl

from interop.errors import LayoutError, RegionError, TargetError
from interop.targets import current_gpu_target, name_of, resolve
from interop.triton import interpreter as upstream

from . import autotune, patch
from . import program as prog
from . import tma
from .builder import HybridInterpreterBuilder
from .errors import INTERNAL_PATHS, InterpretError
from .program import Frame, Program

_switch: contextvars.ContextVar = contextvars.ContextVar("hybrid_interpret", default=None)
#: launch options of ``kernel[grid](...)`` that are not kernel arguments
LAUNCH_OPTIONS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
            "launch_pdl", "debug", "sanitize_overflow")


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


@contextlib.contextmanager
def interpreting(target: str | None = None) -> Iterator[None]:
    """Run ``@hybrid.jit`` launches in this block in the interpreter, checking layouts and
    ops against ``target`` (default: ``HYBRID_INTERPRET_TARGET``, the GPU here, else sm100a)."""
    token = _switch.set(target or "")
    try:
        yield
    finally:
        _switch.reset(token)


def launch(kernel, grid, *args, target: str | None = None, **kwargs) -> None:
    """Run ``kernel[grid](*args, **kwargs)`` in the interpreter (an autotuned kernel: ``autotune.py``)."""
    if autotune.is_wrapped(kernel):
        return autotune.launch_wrapped(launch, kernel, grid, args, kwargs, target)
    target = resolve(target or default_target())
    # As Triton's JIT reads them: a launch option named like a kernel parameter (``num_warps``,
    # ``num_stages``) is both that parameter's argument and the launch option.
    options = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS}
    kwargs = {k: v for k, v in kwargs.items() if k in kernel.arg_names}
    num_warps = int(options.get("num_warps") or 4)
    builder = HybridInterpreterBuilder(target, num_warps, int(options.get("num_ctas") or 1))
    executor = upstream.GridExecutor(kernel.fn, kernel.arg_names, grid)
    args_hst, kwargs_hst = upstream.host_arguments(executor, args, kwargs)
    constexprs = {kernel.arg_names[i] for i in kernel.constexprs}
    language = patch.language_of(kernel)
    with patch.patched():
        call_args = inspect.getcallargs(kernel.fn, *args_hst, **kwargs_hst)
        call_args = {name: value if name in constexprs else _device_value(value) for name, value in call_args.items()}
        grid = grid(call_args) if callable(grid) else grid
        grid = tuple(grid) + (1, ) * (3 - len(grid))
        builder.set_grid_dim(*grid)
        fn = patch.rewritten(kernel)
        frame = Frame(language, patch.semantic_for(language, num_warps, builder), num_warps, "the program")
        for x in range(grid[0]):
            for y in range(grid[1]):
                for z in range(grid[2]):
                    builder.set_grid_idx(x, y, z)
                    with prog.running(Program(name_of(target), target.warp_size, num_warps)), prog.frame(frame):
                        _run(fn, call_args, kernel.__name__, (x, y, z))
    upstream.restore_arguments(executor, args, args_hst, kwargs, kwargs_hst)


def _device_value(value):
    if tma.is_host_descriptor(value):
        return tma.device_descriptor(value)
    if isinstance(value, float):   # an fp32 scalar, as the compiled kernel takes it (so `eps.to(tl.float32)` works)
        return tl.tensor(upstream.TensorHandle(np.array([value], dtype=np.float32), tl.float32), tl.float32)
    return upstream.implicit_cvt(value)


def _run(fn, call_args: dict, name: str, pid: tuple) -> None:
    try:
        fn(**call_args)
    except (InterpretError, LayoutError, TargetError, RegionError):
        raise
    except Exception as exc:   # upstream's front-end checks: say where, in the kernel's source
        site = _user_frame(exc)
        raise InterpretError(f"{site}: {type(exc).__name__}: {exc}\n  (interpreting {name}, program {pid})") from exc


def _user_frame(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(INTERNAL_PATHS)
              and not f.filename.startswith("<")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
