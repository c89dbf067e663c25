"""Make ``tl``/``gl`` builtins and ``@jit`` calls run in the interpreter, for one launch.

Upstream's Triton interpreter binds every builtin to one fixed ``TritonSemantic``. A mixed
kernel needs the semantic of the function being run, as the code generator of that function
would use: builtins look it up on the calling thread's frame (``program.py``). Calls to
``@triton.jit`` / ``@gluon.jit`` functions run their Python bodies (with upstream's interpreter
AST rewrite); a call into the other language crosses a boundary (``boundary.py``).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import pkgutil
import types
from typing import Iterator

import numpy as np
import triton.experimental.gluon.language as gl
import triton.language as tl
from triton.experimental.gluon.language.nvidia.hopper import tma as gluon_tma
from triton.runtime import JITFunction

import hybrid
from interop.targets import arch
from interop.errors import NoResult, RegionError, TargetError, host_descriptor_into_region, nested_region
from interop.targets import TARGETS
from interop.triton import interpreter as upstream
from interop.triton.frontend import GluonJITFunction
from interop.triton.language import LAYOUT_TO_IR, gluon_core, normalize_tuple

from . import boundary, libdevice, numerics
from . import program as prog
from . import warp_specialize
from .errors import UnsupportedOpError, user_site
from .program import Frame
from .semantic import GluonInterpreterSemantic


@functools.lru_cache(maxsize=None)
def _gluon_modules() -> tuple:
    mods = [gl]
    for info in pkgutil.walk_packages(gl.__path__, gl.__name__ + "."):
        if info.name.rsplit(".", 1)[-1] in ("_semantic", ):
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError:   # an architecture's module this Triton build lacks
            continue
    return tuple(mods)


@functools.lru_cache(maxsize=None)
def _layout_classes() -> tuple:
    """Gluon's layout classes: those that build their own IR attribute."""
    return tuple({cls for module in _gluon_modules() for cls in vars(module).values()
                  if inspect.isclass(cls) and LAYOUT_TO_IR in vars(cls)})


def language_of(fn: JITFunction) -> str:
    return "gluon" if isinstance(fn, GluonJITFunction) else "triton"


def _is_builtin(member) -> bool:
    return tl.core.is_builtin(member)


def _is_value_method(member) -> bool:
    """A method of a Triton or Gluon value that takes ``_semantic`` without being marked a builtin
    (Gluon's ``shared_memory_descriptor.slice`` in 3.9): the code generator passes it the semantic."""
    return inspect.isfunction(member) and "_semantic" in inspect.signature(member).parameters


def semantic_for(language: str, num_warps: int, builder):
    return GluonInterpreterSemantic(builder, num_warps) if language == "gluon" else boundary.AnchorWatch(builder)


def _dynamic(member):
    """``member`` called with the running frame's semantic (where it takes one, as the code
    generator passes it), after the architecture check the compiler makes (``interop.targets.arch``)."""
    feature = arch.feature_of_builtin(member)
    takes_semantic = _takes_semantic(member)
    name = arch.builtin_name(member)

    def call(*args, **kwargs):
        kwargs.pop("_generator", None)
        semantic = prog.current_frame().semantic
        if feature is not None:
            arch.check_builtin(member, semantic.builder.target, user_site)
        if takes_semantic:
            kwargs["_semantic"] = semantic
        try:
            return member(*args, **kwargs)
        except UnsupportedOpError as exc:
            if name is None:
                raise
            raise exc.within(name.removeprefix("_core.")) from None
    return call


def _takes_semantic(member) -> bool:
    try:
        parameters = inspect.signature(member).parameters
    except (TypeError, ValueError):
        return True
    return "_semantic" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _check_descriptors(fn: JITFunction, args: tuple, kwargs: dict, region: str) -> None:
    """Triton lays a Gluon host's descriptor out for a Triton region's loads (in the default NVMMA
    layout of its block): one the host made in another layout is refused, as the compiler refuses
    it (``triton_regions._check_descriptors``)."""
    for name, value in (*zip(fn.arg_names, args), *kwargs.items()):
        if isinstance(value, gluon_tma.tensor_descriptor):
            chosen = gl.NVMMASharedLayout.get_default_for(list(value.block_type.shape), value.block_type.element_ty)
            if value.layout != chosen:
                raise host_descriptor_into_region(fn.__name__, region.split(" called at ")[-1], name,
                                                  str(value.layout), str(chosen))


def _without_tma(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A Triton descriptor enters a Gluon function as Gluon's TMA descriptor where the target has
    TMA (``boundary.into``), and as the ``PointerDescriptor`` Triton lowers it to elsewhere, as
    compiled (``gluon_regions.GluonRegions._descriptor_type``)."""
    if TARGETS[prog.program().target] in arch.SM90_UP:
        return args, kwargs
    return tuple(boundary.pointer_view(a) for a in args), {k: boundary.pointer_view(v) for k, v in kwargs.items()}


def call_jit(fn: JITFunction, args: tuple, kwargs: dict, *, num_warps: int | None = None, partition: str | None = None):
    """Run ``fn``'s body as the interpreter: in its own language, or its caller's for
    ``triton.language`` library functions (as compiled code inlines them)."""
    caller = prog.current_frame()
    library = getattr(fn.fn, "__module__", "").startswith("triton.")
    language = caller.language if library else language_of(fn)
    num_warps = num_warps or caller.num_warps
    crossing = language != caller.language
    region = caller.region
    if crossing and language == "triton":
        region = f"'{fn.__name__}' called at {user_site().split(' in ')[0]}"
        _check_descriptors(fn, args, kwargs, region)
    elif crossing and caller.region is not None:   # Gluon -> Triton -> Gluon: refused as the compiler refuses it
        raise nested_region(fn.__name__, user_site().split(" in ")[0], caller.region)
    elif crossing:   # into a Gluon function
        args, kwargs = _without_tma(args, kwargs)
        region = None
    given = boundary.given_layouts((*args, *kwargs.values())) if crossing and language == "triton" else []
    if crossing:
        origin = f"the {caller.language} caller gave '{fn.__name__}'"
        args = tuple(boundary.into(language, a, origin) for a in args)
        kwargs = {k: boundary.into(language, v, origin) for k, v in kwargs.items()}
    semantic = caller.semantic if language == caller.language and num_warps == caller.num_warps else \
        semantic_for(language, num_warps, caller.semantic.builder)
    with prog.frame(Frame(language, semantic, num_warps, partition or caller.partition, region)):
        if crossing and language == "gluon":
            args, kwargs = boundary.declared(fn, args, kwargs, semantic)
        try:
            result = rewritten(fn)(*args, **kwargs)
        except TargetError as missing:   # in a Gluon region of Triton code: named as the compiler names it
            if not crossing or language != "gluon":
                raise
            raise RegionError(fn.__name__, user_site().split(" in ")[0], missing.reason, missing.hint) from None
        if crossing and result is None and language == "triton":   # a Triton region that returns nothing
            return NoResult(fn.__name__, region.split(" called at ")[1])
        if crossing:
            kept = None if getattr(semantic, "anchored", True) else given
            result = boundary.into(caller.language, result, f"{language} region '{fn.__name__}' returned", semantic,
                                   kept)
    return result


_rewritten: dict = {}


def rewritten(fn: JITFunction):
    """``fn``'s Python function after upstream's interpreter AST rewrite, with its globals'
    builtins bound to the running frame's semantic (a kernel module may alias a builtin, as
    ``tma_load = tma.async_load``; patching the ``tma`` module would not reach the alias)."""
    if fn.fn not in _rewritten:
        function = upstream.FunctionRewriter(fn.fn).rewrite_ast()
        # ``__builtins__`` stays: in a script run as ``__main__`` it is the builtins module, which
        # Python indexes for ``float``, ``range``... (elsewhere a dict).
        scope = {name: value if name == "__builtins__" else _global(value)
                 for name, value in function.__globals__.items()}
        _rewritten[fn.fn] = types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__,
                                               function.__closure__)
    return _rewritten[fn.fn]


def _global(value):
    """A kernel module's global as the interpreter runs it."""
    if libdevice.is_libdevice(value):
        return libdevice.stand_in(value)
    if isinstance(value, types.ModuleType) and not value.__name__.startswith("triton"):
        return _ModuleView(value)
    return _dynamic(value) if _is_builtin(value) else value


class _ModuleView:
    """A user module a kernel reaches builtins through (``helpers.fence_async_shared()``, where
    ``helpers`` imported it by name): its attributes as ``_global`` gives them."""

    def __init__(self, module: types.ModuleType):
        self._module = module

    def __getattr__(self, name: str):
        return _global(getattr(self._module, name))


def _warp_specialize(self, functions_and_args, worker_num_warps, worker_num_regs=None, generator=None):
    def run_partition(fn, args, num_warps, partition):
        return call_jit(fn, tuple(args), {}, num_warps=num_warps, partition=partition)
    return warp_specialize.run(run_partition, list(functions_and_args), list(worker_num_warps))


class _ReduceOps(upstream.ReduceOps):
    """Upstream's reductions, with ``tl.sum`` of bf16/fp8 adding values step by step (each add
    rounded, as the compiled combine is) where upstream's fast path sums their raw bits."""

    def sum(self, input):
        if not numerics.stored_as_bits(input.dtype.scalar):
            return super().sum(input)
        # the compiled reduction has its add even where no two elements meet (a 1-element tile)
        prog.current_frame().semantic.builder.check_fp8_arithmetic(input.dtype.scalar, np.add)
        return self.generic_reduce((input, ))[0]


def _reduce(input, axis, combine_fn, keep_dims=False, **kwargs):
    results = _ReduceOps(axis, _combining(combine_fn), keep_dims).apply(input)
    return _with_layouts(input, results, None if keep_dims else axis)


def _scan(input, axis, combine_fn, reverse=False, **kwargs):
    return _with_layouts(input, upstream.ScanOps(axis, _combining(combine_fn), reverse).apply(input), None)


def _combining(combine_fn):
    """A user's combine function as upstream's reduce and scan call it (``combine_fn.fn(...)``),
    run through ``call_jit``: in its own language (a Gluon port as the combine function of a
    Triton scan runs with Gluon's semantic, across a boundary, as compiled). Triton's library
    combine functions stay as they are: upstream's fast paths recognise them by identity."""
    if not isinstance(combine_fn, JITFunction) or getattr(combine_fn.fn, "__module__", "").startswith("triton."):
        return combine_fn
    return types.SimpleNamespace(fn=lambda *args: call_jit(combine_fn, args, {}))


def _with_layouts(inputs, results, dropped_axis):
    """Reductions and scans in Gluon code: results keep (a slice of) their input's layout."""
    if prog.current_frame().language != "gluon":
        return results
    if not isinstance(inputs, tuple):
        return _laid_out(results, inputs.type.layout, dropped_axis)
    return tuple(_laid_out(r, x.type.layout, dropped_axis) for r, x in zip(results, inputs))


def _laid_out(result, layout, dropped_axis):
    if not isinstance(result.type, tl.block_type):
        return result
    if dropped_axis is not None:
        layout = gl.SliceLayout(dropped_axis, layout)
    return tl.tensor(result.handle, gl.distributed_type(result.type.element_ty, result.type.shape, layout))


@contextlib.contextmanager
def patched() -> Iterator[None]:
    scope = upstream.LangPatchScope()
    try:
        for module in (tl, tl.core, tl.math, *_gluon_modules(), hybrid):
            _patch_members(module, scope, seen=set())
        for module in libdevice.modules():
            for name, member in list(vars(module).items()):
                if libdevice.is_libdevice(member):
                    scope.set_attr(module, name, libdevice.stand_in(member))
        upstream.patch_lang_tensor(tl.tensor, scope)
        # 3.6's ``int(data)`` rejects the 1-element arrays scalars are (NumPy 2); 3.9 squeezes.
        scope.set_attr(tl.tensor, "__index__", lambda self: int(self.handle.data.squeeze()))
        for lang in (tl, tl.core):   # (library code such as tl.rand's reaches them as ``core``)
            upstream.patch_lang_core(lang, scope)
        for module in (tl, tl.core, gl, gluon_core):
            for name, fn in (("reduce", _reduce), ("associative_scan", _scan)):
                if hasattr(module, name):
                    scope.set_attr(module, name, fn)
        scope.set_attr(tl.tuple, "__radd__", _prepend_to_tuple)
        scope.set_attr(gl, "static_range", tl.static_range)
        scope.set_attr(gl, "static_assert", tl.static_assert)
        _patch_layouts(scope)
        scope.set_attr(GluonInterpreterSemantic, "warp_specialize", _warp_specialize)
        scope.set_attr(JITFunction, "__call__", lambda self, *a, **k: call_jit(self, a, k))
        if "__call__" in vars(GluonJITFunction):
            scope.set_attr(GluonJITFunction, "__call__", lambda self, *a, **k: call_jit(self, a, k))
        yield
    finally:
        scope.restore()
        _rewritten.clear()   # module globals may change between launches


def _prepend_to_tuple(self, other):
    """``[n] + desc.block_type.shape``: compiled, the list literal is a ``tl.tuple`` and the shape
    (a ``tl.tuple``) concatenates; as Python, a list meets a ``tl.tuple``, which had no ``__radd__``."""
    return normalize_tuple(other) + self if isinstance(other, (list, tuple)) else NotImplemented


def _patch_members(owner, scope, seen: set) -> None:
    for name, member in list(vars(owner).items()):
        if _is_builtin(member) or (inspect.isclass(owner) and _is_value_method(member)):
            scope.set_attr(owner, name, _dynamic(member))
        elif inspect.isclass(member) and member.__module__.startswith("triton.") and member not in seen:
            seen.add(member)
            _patch_members(member, scope, seen)


def _patch_layouts(scope) -> None:
    """A layout's "IR" for the interpreter's builder is the layout itself; upstream's builder
    (the layout inference in ``semantic.py``) still gets the real attribute."""
    from .builder import HybridInterpreterBuilder
    for cls in _layout_classes():
        original = vars(cls)[LAYOUT_TO_IR]
        scope.set_attr(cls, LAYOUT_TO_IR, lambda self, builder, original=original:
                       self if isinstance(builder, HybridInterpreterBuilder) else original(self, builder))

