"""Which op needs which architecture (one table, read by the compiler and the interpreter), and
shared memory.

Gluon lets an author write any architecture's op for any target, and upstream's backends then
fail late and badly: wgmma on sm100a or the async-proxy fence, TMA or ``warp_specialize`` on
sm80 end in an LLVM abort ("Cannot select: intrinsic ..."), an AMD buffer op on NVIDIA in an
abort, a TMA descriptor on AMD in ``'HIPOptions' object has no attribute 'enable_iisan'``.
``FEATURES`` says, per Gluon builtin (and per ttg op, for what Triton's own passes produce),
which targets have it. The compiler checks every builtin call as it generates code
(``interop.lowering.interception``) and every op of a built module (``interop.entry.source``);
the interpreter checks the same builtins as it runs them (``hybrid.interpret.patch``). Both raise the same ``TargetError`` at the call's
``file:line``. The rows were found by compiling each op for every target with Triton 3.6 and
3.9 (``tests/test_conformance.py`` keeps checking those its kernels use): an op is listed where
it compiles; Blackwell's TMA gather/scatter and the other generations follow upstream's docs.
A kernel over the target's shared memory only fails at launch upstream; ``hybrid.compile``
checks it ahead of time, with what each region allocates.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Container

from . import name_of
from ..boundary import element_bits, tile_bytes
from ..errors import ARCH_HINT, TargetError
from ..locations import op_lines
from ..triton.language import is_builtin

GLUON_LANGUAGE = "triton.experimental.gluon.language."


@dataclass(frozen=True)
class Archs:
    """Targets of one backend: NVIDIA compute capabilities or AMD architecture names."""
    label: str            # how messages and docs/errors.md name them: "sm90a", "sm90+", "gfx942/gfx950"
    backend: str
    archs: Container

    def __contains__(self, target) -> bool:
        return target.backend == self.backend and target.arch in self.archs


NVIDIA = Archs("NVIDIA (sm80+)", "cuda", range(80, 1000))
SM90_UP = Archs("sm90+ (sm90a, sm100a)", "cuda", range(90, 1000))
SM90 = Archs("sm90a", "cuda", (90, ))
SM100 = Archs("sm100a", "cuda", (100, 103))
CDNA3_UP = Archs("gfx942/gfx950", "hip", ("gfx940", "gfx941", "gfx942", "gfx950"))
CDNA4 = Archs("gfx950", "hip", ("gfx950", ))


@dataclass(frozen=True)
class Feature:
    """What a group of ops is, the targets that have it, and how to recognise its ops: Gluon
    builtins by name prefix (relative to ``triton.experimental.gluon.language``, as
    ``module.qualname``) and ttg ops by name prefix."""
    what: str
    where: tuple[Archs, ...]
    builtins: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()   # element types by their signature names ("fp8e4nv")
    on_types: tuple[str, ...] = ()   # for ``ops``: only where the op's result type names one ("f8E")

    def available(self, target) -> bool:
        return any(target in archs for archs in self.where)

    @property
    def needs(self) -> str:
        if not self.where:
            return "none of the targets triton-hybrid builds for"
        return " or ".join(archs.label for archs in self.where)


#: float arithmetic ops (arith dialect, and math's fma) by name
FP8_ARITHMETIC = tuple(f"arith.{op}" for op in ("addf", "subf", "mulf", "divf", "remf", "negf", "maximumf", "minimumf",
                                                "maxnumf", "minnumf")) + ("math.fma", )

#: First match wins: specific rows (mbarrier arrivals of cp.async, AMD buffer copies) before the
#: general ones, catch-alls at the end. A name is a prefix.
FEATURES: tuple[Feature, ...] = (
    Feature("mma.sync (mma_v2)", (NVIDIA, ), ("nvidia.ampere.mma_v2", )),
    Feature("mbarriers", (NVIDIA, ),
            ("nvidia.ampere.mbarrier.", "nvidia.hopper.mbarrier.arrive", "nvidia.ampere.async_copy.mbarrier_arrive"),
            ("ttng.init_barrier", "ttng.inval_barrier", "ttng.arrive_barrier", "ttng.wait_barrier",
             "ttng.async_copy_mbarrier_arrive")),
    Feature("an mbarrier transaction count (expect)", (SM90_UP, ), ("nvidia.hopper.mbarrier.expect", ),
            ("ttng.barrier_expect", )),
    Feature("the async-proxy fence", (SM90_UP, ), ("nvidia.hopper.fence_async_shared", ),
            ("ttng.fence_async_shared", )),
    Feature("TMA (tensor descriptors and their copies)", (SM90_UP, ), ("nvidia.hopper.tma.", ),
            ("ttng.async_tma", "ttng.tensormap", "ttng.reinterpret_tensor_descriptor")),
    Feature("Hopper warpgroup MMA (wgmma)", (SM90, ), ("nvidia.hopper.warpgroup_mma", ), ("ttng.warp_group_dot", )),
    Feature("thread-block clusters", (SM90_UP, ), ("nvidia.hopper.cluster.", "nvidia.hopper.async_store"),
            ("ttng.cluster", "ttng.async_shared_store")),
    Feature("warp specialization (gl.warp_specialize)", (SM90_UP, ), ("_core.warp_specialize", ), ("ttg.warp_", )),
    Feature("Blackwell tcgen05 MMA and tensor memory", (SM100, ),
            ("nvidia.blackwell.allocate_tensor_memory", "nvidia.blackwell.tcgen05_",
             "nvidia.blackwell.tensor_memory_descriptor."), ("ttng.tc_gen5", "ttng.tmem")),
    Feature("Blackwell TMA gather/scatter", (SM100, ), ("nvidia.blackwell.tma.", ), ("ttng.async_tma_gather",
                                                                                     "ttng.async_tma_scatter")),
    Feature("Blackwell packed fp32 arithmetic", (SM100, ),
            tuple(f"nvidia.blackwell.{op}2" for op in ("add", "sub", "mul", "fma", "max", "min")),
            ("ttng.packed_arith", )),
    Feature("Blackwell cluster launch control", (SM100, ), ("nvidia.blackwell.clc.", ), ("ttng.clc", )),
    Feature("AMD buffer ops", (CDNA3_UP, ),
            ("amd.cdna3.buffer_", "amd.cdna4.buffer_", "amd.cdna4.async_copy.buffer_load_to_shared",
             "hybrid.amd.buffer_"),
            ("amdg.buffer", "amdgpu.buffer")),
    Feature("AMD MFMA", (CDNA3_UP, ), ("amd.cdna3.mfma", "hybrid.amd.mfma")),
    Feature("async copies into shared memory (cp.async, direct-to-LDS loads; commit and wait groups)",
            (NVIDIA, CDNA3_UP), ("nvidia.ampere.async_copy.", "amd.cdna4.async_copy."),
            ("ttg.async_copy_global_to_local", "ttg.async_commit_group", "ttg.async_wait")),
    Feature("CDNA4 scaled MFMA and fp4 ops", (CDNA4, ), ("amd.cdna4.", )),
    Feature("an op of another GPU generation (gfx1250, RDNA, Rubin)", (),
            ("amd.gfx1250.", "amd.cdna5.", "amd.rdna3.", "amd.rdna4.", "nvidia.rubin.")),
    Feature("an AMD scheduling hint", (CDNA3_UP, ), ("hybrid.amd.", ), ("rocdl.s.setprio", "rocdl.sched.")),
    Feature("an NVIDIA op", (NVIDIA, ), ("nvidia.", ), ("ttng.", )),
    Feature("an AMD op", (CDNA3_UP, ), ("amd.", ), ("amdgpu.", "amdg.")),
    # Arithmetic on fp8 values (fp8 op fp8 -> fp8, a reduction's adds): no backend lowers it
    # (``PassManager::run failed``); Triton computes fp8 with a wider operand in the wider type.
    Feature("arithmetic on fp8 values (convert them to fp16/bf16/fp32 first)", (), ops=FP8_ARITHMETIC,
            on_types=("f8E", )),
    # Element types: the fp8 formats each backend converts and multiplies (Triton's own
    # ``supported_fp8_dtypes`` per target, which tests/test_request_validation.py compares with
    # these rows); fp8e5 (OCP e5m2) and the wider types are on every target.
    Feature("fp8 e4m3 (fp8e4nv, OCP e4m3fn)", (SM90_UP, CDNA3_UP), dtypes=("fp8e4nv", )),
    Feature("fp8 e4m3 with exponent bias 15 (fp8e4b15)", (NVIDIA, ), dtypes=("fp8e4b15", )),
    Feature("AMD's fp8 FNUZ formats (fp8e4b8, fp8e5b16)", (CDNA3_UP, ), dtypes=("fp8e4b8", "fp8e5b16")),
)

#: threads per warp on each backend, and threads one CTA may have
WARP_SIZE = {"cuda": 32, "hip": 64}
MAX_THREADS_PER_CTA = 1024


def max_warps(target) -> int:
    return MAX_THREADS_PER_CTA // target.warp_size


def builtin_name(fn) -> str | None:
    """A Gluon builtin's name relative to Gluon's language package (``nvidia.hopper.warpgroup_mma``),
    hybrid's own builtin's public name, or None for anything else (Triton's builtins, layout classes, Python functions)."""
    fn = getattr(fn, "__func__", fn)
    if getattr(fn, "hybrid_name", None) and is_builtin(fn):   # hybrid's own (``hybrid.amd.setprio``)
        return fn.hybrid_name
    module = getattr(fn, "__module__", None) or ""
    if not module.startswith(GLUON_LANGUAGE) or not is_builtin(fn):
        return None
    return f"{module[len(GLUON_LANGUAGE):]}.{getattr(fn, '__qualname__', '?')}"


@functools.lru_cache(maxsize=None)
def _feature_named(name: str) -> Feature | None:
    return next((f for f in FEATURES if any(name.startswith(prefix) for prefix in f.builtins)), None)


def feature_of_builtin(fn) -> Feature | None:
    name = builtin_name(fn)
    return None if name is None else _feature_named(name)


@functools.lru_cache(maxsize=None)
def feature_of_op(op_name: str) -> Feature | None:
    return next((f for f in FEATURES if any(op_name.startswith(prefix) for prefix in f.ops)), None)


@functools.lru_cache(maxsize=None)
def feature_of_dtype(name: str) -> Feature | None:
    """The row for an element type (a signature name such as ``fp8e4nv``), or None: every target has it."""
    return next((f for f in FEATURES if name in f.dtypes), None)


#: Triton's fp8 element types, by their signature names
FP8_TYPES = ("fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp8e4b15")


def supported_fp8_dtypes(target) -> tuple[str, ...]:
    """The fp8 types ``target`` has, as Triton's backend options name them (``supported_fp8_dtypes``)."""
    return tuple(sorted(n for n in FP8_TYPES if feature_of_dtype(n) is None or feature_of_dtype(n).available(target)))


def check_dtype(name: str, target, site) -> None:
    """Raise a ``TargetError`` where ``target`` lacks the element type ``name``; ``site`` says
    where it is used (a string, or a callable computed only for an error)."""
    feature = feature_of_dtype(name)
    if feature is not None and not feature.available(target):
        where = site() if callable(site) else site
        raise TargetError(f"{where}: {name} is {feature.what}, which {target_label(target)} does not have "
                          f"(it needs {feature.needs})", "use a type the target has: fp16, bf16 or fp8e5 (e5m2)")


def target_label(target) -> str:
    return name_of(target)


def missing_op_error(op: str, feature: Feature, target, site: str) -> TargetError:
    """The error both the compiler and the interpreter raise for ``op`` (a builtin's name or a ttg
    op) written at ``site`` (``file:line in function``) for a ``target`` that lacks ``feature``."""
    return TargetError(f"{site}: {op} is {feature.what}, which {target_label(target)} does not have "
                       f"(it needs {feature.needs})", ARCH_HINT)


def check_builtin(fn, target, site) -> None:
    """Raise ``missing_op_error`` where ``fn`` is a Gluon builtin ``target`` lacks. ``site`` is
    a ``file:line in function`` string, or a callable giving one (computed only for an error)."""
    feature = feature_of_builtin(fn)
    if feature is not None and not feature.available(target):
        name = builtin_name(fn).removeprefix("_core.")
        raise missing_op_error(name, feature, target, site() if callable(site) else site)


@dataclass(frozen=True)
class Misplaced:
    op: str
    feature: Feature
    where: str | None   # file:line of the first such op, where its location is known


def misplaced_ops(module, target) -> list[Misplaced]:
    """Ops in ``module`` that ``target`` (a ``GPUTarget``) cannot run: the first op per missing
    feature, with its source line."""
    found: dict[Feature, str] = {}

    def visit(op):
        feature = feature_of_op(op.get_name())
        if feature is not None and feature.on_types and op.get_num_results() and \
                not any(t in str(op.get_result(0).get_type()) for t in feature.on_types):
            return
        if feature is not None and not feature.available(target) and feature not in found:
            found[feature] = op.get_name()

    module.walk(visit)
    if not found:
        return []
    lines = {}
    for name, where, _ in op_lines(str(module)):
        lines.setdefault(name, where)
    return [Misplaced(op, feature, lines.get(op)) for feature, op in found.items()]


def describe_misplaced(misplaced: list[Misplaced], target) -> str:
    return "; ".join(f"{m.op} at {m.where or '?'} is {m.feature.what}, which {target_label(target)} does not have "
                     f"(it needs {m.feature.needs})" for m in misplaced)


def describe(target) -> str:
    return f"{target.backend}:{target.arch}"


#: Shared memory (LDS) one CTA may use, by NVIDIA compute capability or AMD architecture.
_SHARED_LIMIT = {80: 166912, 86: 101376, 89: 101376, 90: 232448, 100: 232448, 120: 101376,
                 "gfx942": 65536, "gfx950": 163840}


def shared_memory_limit(target) -> int | None:
    return _SHARED_LIMIT.get(target.arch)


def allocated_shared_bytes(module) -> int:
    """Bytes of the shared-memory buffers ``module`` allocates explicitly (``ttg.local_alloc``)."""
    total = 0

    def visit(op):
        nonlocal total
        if op.get_name() == "ttg.local_alloc":
            total += _memdesc_bytes(str(op.get_result(0).get_type()))

    module.walk(visit)
    return total


def _memdesc_bytes(type_text: str) -> int:
    dims = re.match(r"!ttg\.memdesc<([^,>]+)", type_text).group(1).split("x")
    return tile_bytes([int(d) for d in dims[:-1]], element_bits(dims[-1]))
