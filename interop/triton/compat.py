"""Everything that differs between the supported Triton releases (3.6 through 3.9), and the
hooks the project installs into Triton (its sibling modules name the other internals it uses).

This is the only module that reads ``triton.__version__``; the rest of the project asks
it for capabilities instead of comparing versions (``tests/test_compat.py`` enforces that).
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib
import inspect
import re
import struct
import sys
import textwrap
import threading
from pathlib import Path
from typing import Iterator

import triton
from triton.compiler import code_generator as _codegen_module

SUPPORTED = ((3, 6), (3, 7), (3, 8), (3, 9))


def _parse(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


TRITON_VERSION: str = triton.__version__
TRITON_MAJOR_MINOR = _parse(TRITON_VERSION)

if TRITON_MAJOR_MINOR not in SUPPORTED:
    raise ImportError(f"triton-hybrid supports Triton 3.6 through 3.9; this environment has Triton {TRITON_VERSION}. "
                      f"Install a supported release, e.g. `pip install 'triton>=3.6,<3.10'`.")

def _gluon_namespaces_cleared_at_shutdown() -> None:
    """Let Python clear the Gluon language modules' namespaces at shutdown, so that nanobind
    finds none of Triton's bindings alive and prints no leak report.

    Asked for a value's Gluon layout (``get_gluon_layout_from_tensor``: Gluon's own reductions,
    and every boundary here), Triton 3.9's bindings keep the Python layout classes in a C++ static
    whose references are never dropped. Their methods hold their modules' namespaces (``gluon_ir``,
    the builder types and their default arguments in them). Python clears the namespace of each
    module still alive late in its shutdown, but by then these modules are gone while their
    namespaces live on. A module that refers to itself is still alive there, so Python clears it.
    Runs at exit, when every Gluon module that will be loaded is.
    """
    for name, module in list(sys.modules.items()):
        if name.startswith("triton.experimental.gluon") and module is not None:
            module.__dict__.setdefault("__hybrid_self__", module)


atexit.register(_gluon_namespaces_cleared_at_shutdown)

# 3.9 added `begin_col` to CodeGenerator.__init__ (column of the `def`, for locations).
_CODEGEN_PARAMS = frozenset(inspect.signature(_codegen_module.CodeGenerator.__init__).parameters)


def codegen_location_kwargs(fn) -> dict:
    """Location keyword arguments for ``CodeGenerator`` that this Triton accepts.

    3.7+ keep the file and ``def`` line on the JITFunction (and 3.9 the column); 3.6 computes
    them with ``get_jit_fn_file_line``.
    """
    if not hasattr(fn, "file_name"):
        from triton.runtime.jit import get_jit_fn_file_line
        file_name, begin_line = get_jit_fn_file_line(fn)
        return {"file_name": file_name, "begin_line": begin_line}
    kwargs = {"file_name": fn.file_name, "begin_line": fn.def_file_line_number}
    if "begin_col" in _CODEGEN_PARAMS:
        kwargs["begin_col"] = fn.def_file_col_number
    return kwargs


_install_lock = threading.RLock()


def upstream_code_generator() -> type:
    """Triton's own ``CodeGenerator`` class, also once ``install_code_generator`` has run."""
    cls = _codegen_module.CodeGenerator
    return getattr(cls, "hybrid_upstream", cls)


def install_code_generator(cls) -> None:
    """Make upstream's ``ast_to_ttir`` and nested ``call_JitFunction`` build ``cls`` (a subclass
    of ``upstream_code_generator()`` that acts as upstream's unless a hybrid compile bound it).

    Both look the class up as the module global ``CodeGenerator`` at call time. It is installed
    once for the process, not swapped per compile, so that compiles on other threads are never
    handed a generator bound to someone else's compile; installing again replaces the previous
    hybrid class (a re-imported module), never stacks on it.
    """
    with _install_lock:
        cls.hybrid_upstream = upstream_code_generator()
        _codegen_module.CodeGenerator = cls


def install_stages_hook(extend) -> None:
    """Have Triton call ``extend(backend, stages, options, language)`` each time a backend composes
    a compile's stages, after any hook set before (which keeps working).

    The hook is ``knobs.runtime.add_stages_inspection_hook`` in 3.6 through 3.9; the backends
    call it with ``(backend, stages, options, language, capability)``. 3.9 also calls it with no
    arguments, at the start of every compile and JIT launch, for a cache key and a specialization
    hash: the previous hook's, or nothing added (what ``extend`` does to a hybrid compile is in
    that source's own hash). Installing again replaces the hook installed before, never stacks on it.
    """
    from triton import knobs
    with _install_lock:
        previous = knobs.runtime.add_stages_inspection_hook
        previous = getattr(previous, "hybrid_previous", previous)

        def add_stages_inspection_hook(*args):
            if not args:
                return previous() if previous is not None else ("", "")
            if previous is not None:
                previous(*args)
            backend, stages, options, language = args[:4]
            extend(backend, stages, options, language)

        add_stages_inspection_hook.hybrid_previous = previous
        knobs.runtime.add_stages_inspection_hook = add_stages_inspection_hook


# 3.6's ASTFunction takes constexpr values in a separate `constants` dict keyed by argument
# path and expects the bare `constexpr` class as their type; 3.7+ carries them in the types.
_AST_FUNCTION_TAKES_CONSTANTS = "constants" in inspect.signature(_codegen_module.ASTFunction.__init__).parameters


def function_prototype(args: list, arg_types: list):
    """A callee prototype for ``CodeGenerator``: ``args`` are the normalized call arguments
    (``tl.constexpr`` for compile-time ones), ``arg_types`` the types the callee should see."""
    from triton._utils import find_paths_if, get_iterable_path
    from triton.language.core import constexpr

    if not _AST_FUNCTION_TAKES_CONSTANTS:
        return _codegen_module.ASTFunction([], arg_types, {})
    constants = {path: get_iterable_path(args, path) for path in find_paths_if(args, lambda _, x: isinstance(x, constexpr))}
    types = [constexpr if isinstance(arg, constexpr) else ty for arg, ty in zip(args, arg_types)]
    return _codegen_module.ASTFunction([], types, constants, {})


def in_loop_carry_discovery(generator) -> bool:
    """Whether ``generator`` is in the dry visit of a loop body whose IR will be discarded.

    3.9 marks it; 3.6 does not, and there the compile filters uncalled regions afterwards.
    """
    return getattr(generator, "_loop_carry_discovery_depth", 0) > 0


def returns_nothing(ret_type) -> bool:
    """Whether a ``CodeGenerator``'s ``ret_type`` says the function returns nothing: ``tl.void``
    in 3.6, ``constexpr_type(None)`` (the value of a bare ``return``) in 3.9."""
    from triton.language import core as tl
    return (ret_type is None or ret_type == tl.void
            or (isinstance(ret_type, tl.constexpr_type) and ret_type.value is None))


def sched_barrier_mask(mask: int, names: tuple[str, ...]) -> str:
    """A ``rocdl.sched.barrier`` mask as the installed MLIR parses it: class names joined by
    ``|`` (``none`` for 0) in 3.9, where it is an enum; the integer in 3.6 to 3.8."""
    if TRITON_MAJOR_MINOR >= (3, 9):
        return "|".join(names) or "none"
    return str(mask)


def cached_files(key: str, suffix: str) -> list[str]:
    """The files Triton's cache holds for the compile of hash ``key`` whose names end in
    ``suffix`` (none where the cache manager keeps no local folder)."""
    from triton.runtime.cache import get_cache_manager
    folder = getattr(get_cache_manager(key), "cache_dir", None)
    if not folder or not Path(folder).is_dir():
        return []
    return sorted(str(path) for path in Path(folder).iterdir() if path.name.endswith(suffix))


#: An integer ``arith.constant``'s value, in the pretty form or in the generic one (a module that
#: does not verify yet, as while a host's code is generated, prints so).
_CONSTANT = re.compile(r"arith\.constant\"?(?:\(\))? (?:<\{value = )?(?:dense<)?(-?\d+)>? : (?:tensor<[\dx]*)?i\d+\b")


#: A splat ``arith.constant``'s element literal, as its own line prints it.
_SPLAT = re.compile(r"= arith\.constant dense<([^<>\[\]]+)> :")
#: How MLIR prints a float of each type in hex (where decimal would not round-trip): the integer
#: the hex digits are read as, the float that integer's bits are, and the shift into that float.
_HEX_FLOATS = {"f32": ("<I", "<f", 0), "f16": ("<H", "<e", 0), "bf16": ("<I", "<f", 16), "f64": ("<Q", "<d", 0)}
_INTEGERS = ("i8", "i16", "i32", "i64")


class Integers:
    """The integer attributes and the constants of ``module``'s ops, as one step reads them.

    3.8's and 3.9's bindings read integers from an op. 3.6's read only string, bool and symbol
    attributes, 3.7's no constant values, and none reads a float constant (3.9's
    ``get_constant_value`` gives None for one; bools, -1 there, are read with the floats): there
    every op is given a name location for one print of the module (Triton's printer names a
    value after its op's name location, so each op's own line is found by its name), its line
    kept, and its location put back. Ops made after the print are unknown to it (None)."""

    _NAME = "hybrid.read."
    #: ``arith.cmpi``'s predicates in MLIR's ``arith::CmpIPredicate`` order (its ``predicate``).
    PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")

    def __init__(self, module, builder, direct: bool | None = None):
        """``direct``: read from the ops (None: where the bindings can; False: from the print)."""
        from triton._C.libtriton import ir
        can = hasattr(ir.operation, "get_int_attr") and hasattr(ir.operation, "get_constant_value")
        self._direct = can if direct is None else direct and can
        self._module, self._builder = module, builder
        self._lines: dict[int, str] | None = None if self._direct else self._printed_lines(module, builder)

    def int_attr(self, op, name: str) -> int | None:
        """``op``'s integer attribute ``name`` (``arith.cmpi``'s ``predicate``: its index in
        ``PREDICATES``); None where it has none."""
        if self._direct:
            return op.get_int_attr(name)
        line = self._line(op)
        if name == "predicate" and (found := re.search(r"arith\.cmpi (\w+),", line)):
            return self.PREDICATES.index(found.group(1))
        found = re.search(rf"[{{ ]{re.escape(name)} = (-?\d+) : i\d+", line)
        return int(found.group(1)) if found else None

    def integer_constant(self, op) -> int | None:
        """The value of an integer (or integer splat) ``arith.constant``; None for a float, a bool
        or a constant of distinct elements."""
        if self._direct:
            try:
                value = op.get_constant_value()
            except Exception:   # the bindings raise for constants they do not model
                return None
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        found = _CONSTANT.search(self._line(op))
        return int(found.group(1)) if found else None

    def splat_constant(self, op, element: str) -> int | bool | float | None:
        """The element of a splat ``arith.constant`` of ``element`` type (its result's, as printed:
        ``i32``, ``i1``, ``bf16``, ...); None for a constant of distinct elements or of another
        type. Integers as ``integer_constant`` reads them; bools and floats off the op's own line
        (the module printed on first need), where MLIR prints a float exactly."""
        if element in _INTEGERS:
            return self.integer_constant(op)
        if element != "i1" and element not in _HEX_FLOATS:
            return None
        found = _SPLAT.search(self._line(op))
        if found is None:
            return None
        literal = found.group(1)
        if element == "i1":
            return literal == "true"
        if literal.startswith("0x"):
            raw, as_float, shift = _HEX_FLOATS[element]
            return struct.unpack(as_float, struct.pack(raw, int(literal, 16) << shift))[0]
        return float(literal)

    def bool_constant(self, op) -> bool | None:
        """The value of an ``i1`` ``arith.constant``; None for any other op."""
        if op.get_name() != "arith.constant" or str(op.get_result(0).get_type()) != "i1":
            return None
        if self._direct:
            try:
                value = op.get_constant_value()
            except Exception:   # the bindings raise for constants they do not model
                return None
            return bool(value) if isinstance(value, int) else None
        found = re.search(r"arith\.constant (true|false)\b", self._line(op))
        return found.group(1) == "true" if found else None

    def _line(self, op) -> str:
        if self._lines is None:
            self._lines = self._printed_lines(self._module, self._builder)
        return self._lines.get(op.get_result(0).id(), "") if op.get_num_results() == 1 else ""

    @classmethod
    def _printed_lines(cls, module, builder) -> dict[int, str]:
        ops: list = []
        module.walk(lambda op: ops.append(op) if op.get_num_results() == 1 else None)
        values = [op.get_result(0) for op in ops]
        locations = [value.get_loc() for value in values]
        try:
            for i, (value, location) in enumerate(zip(values, locations)):
                value.set_loc(builder.create_name_loc(f"{cls._NAME}{i}", location))
            text = module.str()
        finally:
            for value, location in zip(values, locations):
                value.set_loc(location)
        by_name = {int(m.group(1)): m.group(0) for m in re.finditer(rf"^\s*%{re.escape(cls._NAME)}(\d+) = .*$",
                                                                     text, re.MULTILINE)}
        return {value.id(): by_name[i] for i, value in enumerate(values) if i in by_name}


def _no_hints(builder) -> tuple:
    """No cache or eviction hints: 3.9's builder takes one cache policy, earlier ones a cache
    modifier and an eviction policy."""
    if hasattr(builder, "get_cache_policy"):
        return (builder.get_cache_policy("none", "evict_normal"), )
    from triton._C.libtriton import ir
    return ir.CACHE_MODIFIER.NONE, ir.EVICTION_POLICY.NORMAL


def create_plain_load(builder, pointers, mask, other):
    """A ``tt.load`` without cache or eviction hints, not volatile."""
    if mask is None:
        return builder.create_load(pointers, *_no_hints(builder), False)
    return builder.create_masked_load(pointers, mask, other, *_no_hints(builder), False)


def create_plain_store(builder, pointers, value, mask) -> None:
    """A ``tt.store`` (masked where ``mask`` is given) without cache or eviction hints."""
    if mask is None:
        builder.create_store(pointers, value, *_no_hints(builder))
    else:
        builder.create_masked_store(pointers, value, mask, *_no_hints(builder))


def gluon_barrier():
    """Gluon's CTA-wide barrier builtin: ``gl.barrier`` in 3.9, ``gl.thread_barrier`` in 3.6."""
    from triton.experimental.gluon import language as gl
    return gl.barrier if hasattr(gl, "barrier") else gl.thread_barrier


#: Whether a Triton region takes a Gluon host's TMA descriptor in the host's shared layout (3.8 on);
#: before, the region's descriptor loads would carry that layout in a tensor type, which the
#: verifier refuses, so the region takes Triton's own descriptor type and lays it out itself
#: (``errors.host_descriptor_into_region`` where that is another layout).
REGION_TAKES_HOST_DESCRIPTORS = TRITON_MAJOR_MINOR >= (3, 8)
#: Where Triton lowers a tensor descriptor to a pointer, shape and strides (no TMA), the i1 flags
#: after those: its padding option, and from the release that rounds f32 to tf32 through a
#: descriptor, that option too (read off the interpreter's descriptor, which has it alike).
LOWERED_DESCRIPTOR_FLAGS = 2 if "round_f32_to_tf32" in inspect.signature(
    importlib.import_module("triton.runtime.interpreter").TensorDescHandle.__init__).parameters else 1
#: Whether Gluon's ``tma.store_wait`` takes ``read_only`` (3.8 on); before, it waits for the stores
#: to complete, as ``read_only=False`` does.
STORE_WAIT_READ_ONLY = TRITON_MAJOR_MINOR >= (3, 8)


def gluon_async_copy():
    """Gluon's cp.async copy of a pointer tensor into shared memory, ``(smem, pointer, mask=None)``:
    ``async_copy.async_load`` in 3.9 (where ``async_copy_global_to_shared`` raises), the latter in 3.6."""
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    return _renamed(async_copy, "async_load", "async_copy_global_to_shared")


def tmem_reg_layout(element_ty, shape: list, block: tuple, num_warps: int):
    """The register layout of a tensor-memory tile for ``tcgen05.ld/st`` (32x32b), for kernels to
    take as a constexpr: 3.9 has the descriptor's own ``tmem.get_reg_layout()`` in kernel code
    (None here: use that), 3.6 only the host-side ``get_tmem_reg_layout``."""
    from triton.experimental.gluon.language.nvidia import blackwell
    if not hasattr(blackwell, "get_tmem_reg_layout"):
        return None
    layout = blackwell.TensorMemoryLayout(block=block, col_stride=1)
    return blackwell.get_tmem_reg_layout(element_ty, shape, layout, num_warps)


@functools.lru_cache(maxsize=None)
def _backend_hash(target) -> str:
    from triton.compiler.compiler import make_backend
    return make_backend(target).hash()


def compiler_fingerprint(target) -> str:
    """What changes a binary besides sources and options, as Triton's own cache key sees it:
    Triton itself (``triton_stamp``), the backend toolchain (ptxas / LLVM versions) and the
    cache-invalidating environment variables (``TRITON_DEFAULT_FP_FUSION`` and the rest; a knob
    set through ``triton.knobs`` sets its variable), for a ``GPUTarget`` (this layer imports
    nothing of the project's)."""
    from triton._C.libtriton import get_cache_invalidating_env_vars
    return f"{triton_stamp()}|{_backend_hash(target)}|{sorted(get_cache_invalidating_env_vars().items())}"


@functools.lru_cache(maxsize=None)
def triton_stamp() -> str:
    """Triton itself, as upstream's ``triton_key`` sees it (its version, Python sources and
    ``libtriton``), cheap enough for every warm build: the sources hashed (milliseconds), the
    native libraries (hundreds of MB, over a second to hash) by size and modification time.
    Once per process: a process runs the Triton it imported."""
    root = Path(triton.__file__).parent
    digest = hashlib.sha256(TRITON_VERSION.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
    for path in sorted(root.glob("_C/*.so")):
        info = path.stat()
        digest.update(f"{path.name}:{info.st_size}:{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def nvidia_tool(name: str) -> Path | None:
    """A CUDA tool shipped inside the Triton wheel (``cuobjdump``), if present."""
    import triton.backends.nvidia
    path = Path(triton.backends.nvidia.__file__).parent / "bin" / name
    return path if path.is_file() else None


def _renamed(module, new: str, old: str):
    """3.9 renamed some Gluon copies; the old name is an error stub there, the only name in 3.6."""
    return getattr(module, new) if hasattr(module, new) else getattr(module, old)


def gluon_tma_copies() -> tuple:
    """Gluon's TMA copy builtins, (global -> shared, shared -> global): ``tma.async_load`` and
    ``tma.async_store`` in 3.9, ``async_copy_global_to_shared``/``..._shared_to_global`` in 3.6."""
    from triton.experimental.gluon.language.nvidia.hopper import tma
    return (_renamed(tma, "async_load", "async_copy_global_to_shared"),
            _renamed(tma, "async_store", "async_copy_shared_to_global"))


def triton_to_gluon(fns: list, target: str) -> tuple[str, str]:
    """Upstream's Triton -> Gluon source translator on ``fns`` (``@triton.jit`` functions, kernels
    or not): returns (the Gluon source text, the translator's module name).

    3.9 ships it as ``triton.tools.triton_to_gluon_translator`` and takes a translator target
    (``sm90``, ``gfx942``: it picks the module its layout helpers come from); 3.6 spells it
    ``triton_to_gluon_translater`` and takes no target (its helpers assume NVIDIA, 32 threads a
    warp). Both read the functions' Python source and translate whatever they call too; 3.6
    reads it dedented (``JITFunction._src``), 3.9 as written, which fails with an
    ``IndentationError`` on a function defined inside an ``if``/``else`` (as kernel libraries
    pick a helper per platform): here 3.9's reader is given dedented source too.
    """
    try:
        from triton.tools.triton_to_gluon_translator import convert_triton_to_gluon
        from triton.tools.triton_to_gluon_translator.target import TranslatorTarget
    except ImportError:
        from triton.tools.triton_to_gluon_translater import translator
        return translator.convert_triton_to_gluon(fns), translator.__name__
    with _dedented_source(importlib.import_module("triton.tools.triton_to_gluon_translator.slice_kernel")):
        text = convert_triton_to_gluon(fns, TranslatorTarget(target.removesuffix("a")))
    return text, convert_triton_to_gluon.__module__


class _DedentingInspect:
    """``inspect`` whose ``getsource`` returns the source dedented, as ``ast.parse`` needs it."""

    def __getattr__(self, name: str):
        return getattr(inspect, name)

    @staticmethod
    def getsource(obj) -> str:
        return textwrap.dedent(inspect.getsource(obj))


_translator_lock = threading.Lock()


@contextlib.contextmanager
def _dedented_source(reader) -> Iterator[None]:
    """Within the block, the translator module ``reader`` reads dedented source."""
    if getattr(reader, "inspect", None) is not inspect:   # a release that reads source some other way
        yield
        return
    with _translator_lock:
        reader.inspect = _DedentingInspect()
        try:
            yield
        finally:
            reader.inspect = inspect


_after_conversion = threading.local()


@contextlib.contextmanager
def _skipping(owner, name: str, flag: threading.local) -> Iterator[None]:
    """``owner.<name>``, a pass adder, adds nothing while the block runs in this thread (other
    threads' compiles are untouched): wrapped once, it asks ``flag`` each time it is called."""
    with _install_lock:
        add = getattr(owner, name)
        if not getattr(add, "hybrid_skippable", False):
            def skippable(pm, *args, **kwargs):
                if not getattr(flag, "active", False):
                    add(pm, *args, **kwargs)

            skippable.hybrid_skippable = True
            setattr(owner, name, skippable)
    flag.active = True
    try:
        yield
    finally:
        flag.active = False


def convert_to_ttgpuir(module, target, options) -> None:
    """The first step of the backend's ``make_ttgir``: Triton's tt -> ttg conversion, with the
    arguments both backends give it in 3.6 through 3.9 (``cuda:<capability>`` and 32-thread warps,
    or ``hip:<arch>`` and the options' warp size)."""
    from triton._C.libtriton import ir, passes
    pm = ir.pass_manager(module.context)
    capability = "".join(ch for ch in str(options.arch) if ch.isdigit())   # NVIDIA options.arch: "sm90"
    name = f"hip:{options.arch}" if target.backend == "hip" else f"cuda:{capability}"
    warp_size = options.warp_size if target.backend == "hip" else 32
    passes.ttir.add_convert_to_ttgpuir(pm, name, options.num_warps, warp_size, options.num_ctas)
    pm.run(module, "hybrid_convert_to_ttgpuir")


@contextlib.contextmanager
def ttgir_after_conversion() -> Iterator[None]:
    """Run the backend's ``make_ttgir`` in this block on a module already converted to ttg
    (``convert_to_ttgpuir``): its own first step, the tt -> ttg conversion, is skipped, every
    other pass runs as the backend composes it. Both backends add that step through
    ``passes.ttir.add_convert_to_ttgpuir`` (NVIDIA in the one pipeline, AMD in its
    ``make_ttgir_early`` one), so it is that call that is made skippable."""
    from triton._C.libtriton import passes
    with _skipping(passes.ttir, "add_convert_to_ttgpuir", _after_conversion):
        yield


#: Triton 3.6's MLIR inlines no ROCDL op: a Triton region whose ttgir holds the ``rocdl.s.setprio``
#: and ``rocdl.sched.barrier`` of AMD's block ping-pong pass is never inlined into its host.
PINGPONG_IN_REGIONS = TRITON_MAJOR_MINOR >= (3, 7)
_without_pingpong = threading.local()


@contextlib.contextmanager
def without_block_pingpong(target) -> Iterator[None]:
    """In this block (this thread only) an AMD ``make_ttgir`` skips its block ping-pong pass where
    regions cannot hold it (``PINGPONG_IN_REGIONS``); the pipeliner still schedules as the backend
    chose. The pass cannot run on the stitched kernel instead: it matches the loop's ``tt.load``
    ops, which the later passes of ``make_ttgir`` have turned into buffer loads by then."""
    if PINGPONG_IN_REGIONS or target.backend != "hip":
        yield
        return
    from triton._C.libtriton import amd
    with _skipping(amd.passes.ttgpuir, "add_block_pingpong", _without_pingpong):
        yield


def add_shared_memory_allocation(pm, target, options) -> None:
    """The backend's own shared-memory allocation pass for ``target``, as its ``make_llir`` adds
    it: NVIDIA's takes the capability and PTX version; AMD's takes the architecture from 3.7 on
    and nothing in 3.6."""
    if target.backend == "hip":
        from triton._C.libtriton import amd
        try:
            amd.passes.ttgpuir.add_allocate_shared_memory(pm, target.arch)
        except TypeError:
            amd.passes.ttgpuir.add_allocate_shared_memory(pm)
        return
    from triton._C.libtriton import nvidia
    from triton.backends.nvidia.compiler import get_ptx_version_from_options
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, target.arch,
                                                        get_ptx_version_from_options(options, target.arch))


def add_conversion_lowering(pm, target, options) -> None:
    """The passes of the backend's ``make_llir`` that lower a module of plain loads, stores and
    layout conversions to the LLVM dialect: shared and global-scratch allocation, then the
    backend's conversion to LLVM (NVIDIA's takes a fourth argument in 3.8 only, the concurrency
    sanitizer's switch; where a release inserts barriers in a pass of its own before it, that pass
    is left out: only the accesses are wanted)."""
    from triton._C.libtriton import passes
    add_shared_memory_allocation(pm, target, options)
    passes.ttgpuir.add_allocate_global_scratch_memory(pm)
    if target.backend == "hip":
        from triton._C.libtriton import amd
        amd.passes.ttgpuir.add_to_llvmir(pm, target.arch, False)
        return
    from triton._C.libtriton import nvidia
    from triton.backends.nvidia.compiler import get_ptx_version_from_options
    ptx_version = get_ptx_version_from_options(options, target.arch)
    try:
        nvidia.passes.ttgpuir.add_to_llvmir(pm, target.arch, ptx_version)
    except TypeError:
        nvidia.passes.ttgpuir.add_to_llvmir(pm, target.arch, ptx_version, False)


def add_host_relayout(pm, target) -> None:
    """The passes of the backend's ``make_ttgir`` that place a host's layout conversions around
    its anchors, in its order: ``remove_layout_conversions``; on AMD then ``optimize_epilogue``
    (a store takes the MFMA layout of the value it stores) and ``remove_layout_conversions``
    again (which, as later in ``make_ttgir``, rematerializes the store's pointers in that layout).
    The same in Triton 3.6 through 3.9."""
    from triton._C.libtriton import passes
    passes.ttgpuir.add_remove_layout_conversions(pm)
    if target.backend == "hip":
        from triton._C.libtriton import amd
        amd.passes.ttgpuir.add_optimize_epilogue(pm)
        passes.ttgpuir.add_remove_layout_conversions(pm)


def in_thread_transpose_enabled(target) -> bool:
    """Whether the AMD ``make_ttgir`` transposes a dot operand's tile in registers before storing
    it to shared memory on ``target``: the backend's own rule and knob (its archs differ by release)."""
    if target.backend != "hip":
        return False
    from triton.backends.amd import compiler
    return bool(compiler.is_in_thread_transpose_enabled(target.arch))


def add_in_thread_transpose(pm) -> None:
    """AMD's ``InThreadTranspose`` and the ``remove_layout_conversions`` ``make_ttgir`` runs after
    it (the same in Triton 3.6 through 3.9)."""
    from triton._C.libtriton import amd, passes
    amd.passes.ttgpuir.add_in_thread_transpose(pm)
    passes.ttgpuir.add_remove_layout_conversions(pm)


def buffer_ops_enabled() -> bool:
    """Whether the AMD backend turns accesses into buffer ops (``TRITON_AMD_USE_BUFFER_OPS``)."""
    from triton import knobs
    return bool(knobs.amd.use_buffer_ops)


def add_buffer_ops(pm, target) -> None:
    """The AMD ``make_ttgir``'s ``ConvertToBufferOps``, with its knobs (3.6 through 3.9 alike)."""
    from triton import knobs
    from triton._C.libtriton import amd
    amd.passes.ttgpuir.add_convert_to_buffer_ops(pm, target.arch, knobs.amd.use_buffer_atomics,
                                                 knobs.amd.buffer_ops_analyze_small_tensor_range)


def add_tmem_interleave(pm) -> None:
    """NVIDIA's ``interleave_tmem`` (each tensor-memory load sunk to its uses, as ``make_ttgir``
    does late on sm100), for a Triton host whose Gluon calls were opaque when it ran there. The
    same in Triton 3.6 through 3.9."""
    from triton._C.libtriton import nvidia
    nvidia.passes.ttnvgpuir.add_interleave_tmem(pm)


class _StandInDriver:
    """Answers the few questions Proton's instrumentation hook asks the active driver (target,
    device, shared memory, arch) for a target with no GPU behind it."""

    def __init__(self, target, shared_limit: int):
        self.target = target
        arch = target.arch if isinstance(target.arch, str) else f"sm{target.arch}"
        properties = {"max_shared_mem": shared_limit, "arch": arch}
        self.utils = type("Utils", (), {"get_device_properties": staticmethod(lambda device: properties)})()

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0


def proton_instrumenting() -> bool:
    """Whether Proton's instrumentation hook is on (it lowers ``proton.record`` ops when a kernel
    compiles): ``proton.start(..., backend="instrumentation")`` sets this flag."""
    from triton.profiler.language import flags
    return bool(flags.instrumentation_on)


@contextlib.contextmanager
def proton_instrumentation(target, shared_limit: int, mode: str = "default") -> Iterator[None]:
    """Proton's own instrumentation hook, active for ``target`` without a GPU, so that compiles in
    this block lower ``proton.record`` scopes with Proton's passes as a profiled launch would.
    The hook reads the active driver when it activates and while it lowers (AMD's arch), so a
    stand-in answers for ``target`` until the block ends; the previous driver is put back as it
    was (not re-created: there may be no GPU to create one for)."""
    from triton.profiler.hooks.instrumentation import InstrumentationHook
    from triton.runtime import driver
    previous = driver._active
    driver.set_active(_StandInDriver(target, shared_limit))
    hook = InstrumentationHook(mode)
    try:
        hook.activate()
        yield
    finally:
        hook.deactivate()
        driver._active = previous
