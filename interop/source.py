"""The ``ASTSource`` of a mixed kernel with a Gluon host, for ``triton.compile`` and the JIT.

``make_ir`` builds the host's ``glir`` exactly as Gluon does, with Triton calls turned into
regions, then stitches the regions in before any Gluon pass runs (Gluon's SCCP must not see a
placeholder). From there on the module follows Gluon's own pipeline to a binary. Regions and
boundary records are stored as module attributes so they survive Triton's on-disk cache.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from triton._C.libtriton import ir
from triton.backends.compiler import Language
from triton.compiler.compiler import ASTSource, make_backend
from triton.compiler.errors import CompilationError
from triton.experimental.gluon._runtime import GluonASTSource

from . import arch, compat, diagnostics, instrument, planner, timing
from .errors import ARCH_HINT, LayoutError, TargetError, raised_within
from .session import HybridSession
from .validate import check_constexpr_layouts

#: Part of every cache key: a change to how regions are lowered or stitched invalidates binaries.
STITCH_VERSION = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py")))).hexdigest()[:16]
REGIONS_ATTR = "hybrid.regions"
BOUNDARIES_ATTR = "hybrid.boundaries"


def variant() -> str:
    """The build settings a kernel's IR depends on beyond its source and options: how boundaries
    are planned and how regions are instrumented. Part of every cache key."""
    return f"{planner.mode()}-{instrument.key()}"


class HybridGluonSource(GluonASTSource):
    """A Gluon host: Triton calls become regions, stitched at ``glir`` before any Gluon pass."""

    def hash(self) -> str:
        return f"{super().hash()}-hybrid{STITCH_VERSION}-{variant()}"

    def make_ir(self, target, options, codegen_fns, module_map, context):
        with _session(self, target, options, context) as (session, generator):
            with compat.code_generator_class(generator):
                try:
                    with diagnostics.capture() as found, timing.stage("host code generation"):
                        module = super().make_ir(target, options, codegen_fns, module_map, context)
                except CompilationError as exc:   # an op the target lacks, however deep the call: its own error
                    missing = raised_within(exc, TargetError)
                    if missing is None:
                        raise
                    raise TargetError(missing.reason, missing.hint) from None   # a new one: no cycle in the chain
                except RuntimeError as exc:
                    if "error encountered during parsing" not in str(exc):
                        raise
                    raise LayoutError(
                        f"the Gluon kernel '{self.fn.__name__}' does not verify for {target.backend}:{target.arch} "
                        f"({options.warp_size}-thread warps, num_warps={options.num_warps}):\n{found.errors()}"
                        "\n  hint: a layout written in the kernel body must match the "
                        "target's warp size and the kernel's num_warps; pass target-specific layouts as "
                        "constexprs.") from exc
            session.finish(module)
        misplaced = arch.misplaced_ops(module, target)
        if misplaced:
            raise TargetError(f"the Gluon kernel '{self.fn.__name__}': {arch.describe_misplaced(misplaced, target)}",
                              ARCH_HINT)
        return _recorded(module, session, context)


class HybridTritonSource(GluonASTSource):
    """A Triton host: lowered by Triton's own ``make_ttir``/``make_ttgir`` with each Gluon call
    kept opaque, then the Gluon bodies are spliced in at ttg. What ``make_ir`` returns is a ttg
    module like a Gluon kernel's, so from here it follows Gluon's pipeline (hence the base class:
    its language and first stage are the Gluon ones of this Triton release)."""

    def hash(self) -> str:
        return f"{super().hash()}-hybrid-triton{STITCH_VERSION}-{variant()}"

    def make_ir(self, target, options, codegen_fns, module_map, context):
        with _session(self, target, options, context) as (session, generator):
            with compat.code_generator_class(generator), timing.stage("host code generation"):
                module = ASTSource.make_ir(self, target, options, codegen_fns, module_map, context)
            stages: dict = {}
            make_backend(target).add_stages(stages, options, Language.TRITON)
            with timing.stage("host tt->ttg (Triton's passes)"):
                module = stages["ttgir"](stages["ttir"](module, {}), {})
            with compat.code_generator_class(generator):
                session.finish_triton_host(module)
        return _recorded(module, session, context)


@contextlib.contextmanager
def _session(source, target, options, context):
    """Check the constexpr layouts, then one ``HybridSession`` (and its code generator class)
    for the compile; its region modules are dropped however the compile ends."""
    check_constexpr_layouts(source.fn, source.constants, options.warp_size, options.num_warps,
                            f"{target.backend}:{target.arch}")
    runtime = [i for i, name in enumerate(source.fn.arg_names) if source.signature.get(name) != "constexpr"]
    session = HybridSession(context, options, target, [list(source.attrs.get((i, ), [])) for i in runtime])
    generator = session.code_generator()
    try:
        yield session, generator
    finally:
        session.close()
        del generator.session


def _recorded(module, session: HybridSession, context):
    """Store the regions and boundary records on the module (they survive Triton's cache)."""
    if session.regions:
        builder = ir.builder(context)
        module.set_attr(REGIONS_ATTR, builder.get_string_attr(json.dumps([r.to_json() for r in session.regions])))
        module.set_attr(BOUNDARIES_ATTR,
                        builder.get_string_attr(json.dumps([b.to_json() for b in session.boundaries])))
    return module
