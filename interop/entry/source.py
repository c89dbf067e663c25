"""The ``ASTSource`` of a mixed kernel, for ``triton.compile`` and the JIT.

A Gluon host's ``make_ir`` builds its ``glir`` exactly as Gluon does, with Triton calls turned
into regions, then stitches the regions in before any Gluon pass runs (Gluon's SCCP must not
see a placeholder); from there on the module follows Gluon's own pipeline to a binary. A Triton
host's ``make_ir`` builds its tt IR with each Gluon call opaque; Triton's own stages lower it and
its Gluon regions are spliced in inside the ``ttgir`` stage (``stages_hook``). Regions and
boundary records are stored on the module (``records``) so they survive Triton's on-disk cache.
"""
from __future__ import annotations

import functools
import hashlib

from ..lowering import interception
from ..targets import arch
from .. import caches, pipeline, records, setting
from ..ir import diagnostics
from . import stages_hook
from ..instrumentation import timing
from .compile_context import CompileContext
from ..errors import ARCH_HINT, LayoutError, NoResultError, TargetError, raised_within
from ..setting import BuildSettings
from ..triton.bindings import ir
from ..triton.frontend import ASTSource, CompilationError, GluonASTSource
from ..validate import check_constexpr_layouts

class _Settled:
    """A mixed kernel's source carries its build settings (``setting``): given, or for a JIT
    launch the defaults where it happens; their key is part of its hash."""

    def __init__(self, fn, signature, constexprs=None, attrs=None, settings: BuildSettings | None = None) -> None:
        super().__init__(fn, signature, constexprs, attrs)
        self.settings = settings or setting.current()

    def hash(self) -> str:
        return hashlib.sha256(f"{super().hash()}-{type(self).__name__}{caches.STITCH_VERSION}-{self.settings.key}"
                              .encode()).hexdigest()   # hex: Triton's dump and override folders decode it


class HybridGluonSource(_Settled, GluonASTSource):
    """A Gluon host: Triton calls become regions, stitched at ``glir`` before any Gluon pass."""

    def make_ir(self, target, options, codegen_fns, module_map, context):
        cc = _new_compile(self, target, options, context)
        try:
            try:
                with interception.generating(cc), timing.stage("host code generation"):
                    module = super().make_ir(target, options, codegen_fns, module_map, context)
            except CompilationError as exc:   # an op the target lacks, however deep the call: its own error
                missing = raised_within(exc, TargetError)
                unused = raised_within(exc, NoResultError)   # as a builtin's argument, wrapped by the generator
                if missing is not None:
                    raise TargetError(missing.reason, missing.hint) from None   # a new one: no cycle in the chain
                if unused is not None and unused is not exc:
                    raise NoResultError(unused.function, unused.call_site, unused.reason, unused.hint) from None
                raise
            except RuntimeError as exc:
                if "error encountered during parsing" not in str(exc) or cc.host_module is None:
                    raise
                raise LayoutError(
                    f"the Gluon kernel '{self.fn.__name__}' does not verify for {target.backend}:{target.arch} "
                    f"({options.warp_size}-thread warps, num_warps={options.num_warps}):\n"
                    f"{diagnostics.verify(cc.host_module)}"
                    "\n  hint: a layout written in the kernel body must match the "
                    "target's warp size and the kernel's num_warps; pass target-specific layouts as "
                    "constexprs.") from exc
            pipeline.run(cc, module)
        finally:
            cc.close()
        _check_ops(module, target, f"the Gluon kernel '{self.fn.__name__}'")
        stages_hook.hand_over_ttir(options, cc.triton_ttir())
        return _recorded(module, cc, context)


class HybridTritonSource(_Settled, ASTSource):
    """A Triton host: a Triton source whose ``make_ir`` keeps each Gluon call opaque, so Triton's
    own ``ttir`` and ``ttgir`` stages lower the kernel; inside the ``ttgir`` stage the Gluon bodies
    are spliced in and the module follows Gluon's pipeline from there (``stages_hook``)."""

    def make_ir(self, target, options, codegen_fns, module_map, context):
        cc = _new_compile(self, target, options, context)
        try:
            with interception.generating(cc), timing.stage("host code generation"):
                module = super().make_ir(target, options, codegen_fns, module_map, context)
            _check_ops(module, target, f"the Triton kernel '{self.fn.__name__}'")
            stages_hook.hand_over(module, self.hash(), options, functools.partial(_finish_triton_host, cc, context))
        except BaseException:
            cc.close()
            raise
        return module


def _finish_triton_host(cc: CompileContext, context, module):
    """After the host's ttgir: its Gluon regions built for the layouts Triton gave their operands,
    spliced, stitched and recorded."""
    try:
        with interception.generating(cc):
            pipeline.run(cc, module)
        return _recorded(module, cc, context)
    finally:
        cc.close()


def _check_ops(module, target, kernel: str) -> None:
    """Every op of ``module`` is one ``target`` has (``interop.targets.arch``): a ``TargetError`` names
    the first of each missing feature and its line, before the backend fails on it."""
    misplaced = arch.misplaced_ops(module, target)
    if misplaced:
        raise TargetError(f"{kernel}: {arch.describe_misplaced(misplaced, target)}", ARCH_HINT)


def _new_compile(source, target, options, context) -> CompileContext:
    """Check the constexpr layouts, then the compile's ``CompileContext``."""
    check_constexpr_layouts(source.fn, source.constants, options.warp_size, options.num_warps,
                            f"{target.backend}:{target.arch}")
    runtime = [i for i, name in enumerate(source.fn.arg_names) if source.signature.get(name) != "constexpr"]
    return CompileContext(context, options, target, source.settings,
                          [list(source.attrs.get((i, ), [])) for i in runtime],
                          host_language="gluon" if isinstance(source, GluonASTSource) else "triton")


def _recorded(module, cc: CompileContext, context):
    """Store the regions and boundary records on the module (they survive Triton's cache)."""
    records.encode(module, ir.builder(context), cc.regions, cc.boundaries)
    return module
