"""``hybrid.compile``: ahead-of-time build of a mixed kernel for one target, no GPU needed."""
from __future__ import annotations

import contextlib
import inspect
import re
from dataclasses import dataclass, field

import triton
from triton.backends.compiler import GPUTarget

from interop.targets import arch

from interop.instrumentation import instrument, timing

from interop import records, targets

from interop.entry import parse_race, request, stages_hook

from interop import setting
from interop.boundary import Boundary
from interop.errors import shared_memory_error
from interop.region import Region
from interop.setting import BuildSettings
from interop.entry.source import HybridGluonSource, HybridTritonSource
from interop.triton import compat
from interop.triton.bindings import ir
from interop.triton.frontend import make_backend

from .metadata import KernelMetadata


@dataclass
class FusedBinary:
    """One fused kernel for one target: every region's code behind a single kernel entry."""
    name: str
    target: str
    asm: dict
    metadata: KernelMetadata   # Triton's metadata: md.shared as on CompiledKernel.metadata, or md["shared"]
    regions: list[Region]
    boundaries: list[Boundary]
    kernel: object = field(repr=False)   # triton CompiledKernel, launchable on a matching GPU
    timing: timing.Timing | None = field(default=None, repr=False)   # where the compile's time went, per stage

    @property
    def binary(self) -> bytes:
        return self.asm["cubin"] if "cubin" in self.asm else self.asm["hsaco"]

    def __getitem__(self, grid):
        return self.kernel[grid]

    @property
    def assembly(self) -> str:
        """The final textual assembly: PTX on NVIDIA, AMDGCN on AMD."""
        return self.asm.get("ptx") or self.asm["amdgcn"]

    @property
    def scopes(self) -> list[str]:
        """The Proton scopes the binary records, in order of first appearance (none unless built
        with ``instrument_regions``)."""
        return list(dict.fromkeys(re.findall(r'proton\.record start "([^"]+)"', self.asm["ttgir"])))

    @property
    def kernel_entries(self) -> int:
        """Kernel entry points in the binary's assembly (a fused kernel has exactly one)."""
        return self.assembly.count(".entry ") if "ptx" in self.asm else self.assembly.count(".amdhsa_kernel ")

    def report(self):
        """Per-region static costs: ttgir ops and machine instructions attributed by source line,
        shared memory, boundaries; kernel registers, spills, shared memory (``hybrid.attribution``).
        A dict (JSON-able) that prints as a table: ``print(fb.report())``."""
        from .attribution import report
        return report(self)

    def summary(self) -> dict:
        """A JSON-able record of this binary, for reports and bundles."""
        return {"kernel": self.name, "target": self.target, "kernel_entries": self.kernel_entries,
                "binary_bytes": len(self.binary), "shared_bytes": self.metadata.get("shared", 0),
                "num_warps": self.metadata.get("num_warps"), "regions": [r.to_json() for r in self.regions],
                "boundaries": [b.to_json() for b in self.boundaries]}


def compile(kernel, signature: dict, constexprs: dict | None = None, target: str | GPUTarget = "sm90a", *,
            aligned_pointers: bool = True, divisible=(), boundaries: str | None = None,
            instrument_regions: bool | None = None, loops: str | None = None, **options) -> FusedBinary:
    """Build ``kernel`` (a ``@hybrid.jit`` kernel) for ``target`` without a GPU.

    ``options`` are the backend's (``num_warps``, ``num_stages``, ...); those not given take the
    backend's own defaults for the target, as a launch through Triton's JIT does (AMD pipelines 2
    stages by default, NVIDIA 3). ``signature`` maps argument names to Triton type strings
    (``"*fp16"``, ``"i32"``); names in ``constexprs`` may be left out or given as ``"constexpr"``.
    With ``aligned_pointers`` every pointer argument is assumed 16-byte aligned, as Triton's JIT
    specializes for aligned tensors;
    ``divisible`` names integer arguments known to be multiples of 16 (strides, sizes), as the JIT
    specializes such values at launch, so that the build is the one a launch with them gets.
    The build settings (``interop.setting``): ``boundaries`` is how boundary conversions are
    planned (``interop.boundaries.planner``): ``"auto"``, or forced to ``"convert"`` (Triton's conversions)
    or ``"shared"`` (shared-memory handoffs). ``instrument_regions`` builds the binary a
    Proton-instrumented launch gets: Proton scopes per region and for the kernel (regions in
    pipelined loops timed per ``loops``: ``"total"`` or ``"iteration"``, ``interop.instrumentation.instrument``),
    lowered by Proton's own passes. A setting not given (None) is the enclosing block's
    (``hybrid.boundary_mode(...)``, ``interop.instrumentation.instrument.forced()``, ``hybrid.profile.profiling()``)
    or the default (``"auto"``, not instrumented, ``"total"``); one given wins over any block.
    """
    constexprs = dict(constexprs or {})
    gpu_target = request.check_request(kernel, signature, constexprs, target, options)
    settings = setting.resolve(boundaries=boundaries, instrument_regions=instrument_regions, loops=loops)
    source = hybrid_source(kernel, signature, constexprs, aligned_pointers, divisible, settings)
    profiled = _instrumented(gpu_target) if settings.instrument_regions else contextlib.nullcontext()
    with timing.recording() as timed, profiled:
        compiled = parse_race.retrying(lambda: triton.compile(source, target=gpu_target, options=options))
    found = records.decode(compiled.asm["ttgir"])
    found = records.reanchored(found, _source_files(kernel, found))
    _check_shared_memory(compiled.metadata, found, gpu_target)
    metadata = KernelMetadata.of(compiled.metadata)
    return FusedBinary(name=compiled.metadata.name, target=targets.name_of(gpu_target),
                       asm=_asm(compiled.asm, metadata.pop(stages_hook.TTIR_KEY, None)), metadata=metadata,
                       regions=list(found.regions), boundaries=list(found.boundaries), kernel=compiled, timing=timed)


def _source_files(kernel, found: records.Records) -> set[str]:
    """The files of ``kernel`` and every JIT function it reaches: where its call sites are. Only
    ``kernel``'s own where every call site of ``found`` is in it: ``records.reanchored`` leaves
    those as they are either way, and the functions reached cost a parse of each one's source."""
    own = inspect.getsourcefile(kernel.fn)
    if all(r.call_site.file == own for r in found.regions):
        return {own}
    from scheduler.cache import reached_functions
    return {inspect.getsourcefile(f.fn) for f in reached_functions(kernel)}


def _asm(asm: dict, ttir: str | None) -> dict:
    """Triton's ``asm``, with a Gluon host's Triton-region tt IR (carried in the metadata, so a
    cached binary has it too) as ``"ttir"`` after the source, where a Triton host has its own."""
    if ttir is None:
        return dict(asm)
    items = list(asm.items())
    items.insert(1 if items and items[0][0] == "source" else 0, ("ttir", ttir))
    return dict(items)


@contextlib.contextmanager
def _instrumented(target):
    """Under Proton's instrumentation hook: one already active (a profiled GPU session), or
    Proton's hook activated for ``target`` without a GPU."""
    if compat.proton_instrumenting():
        yield
        return
    with compat.proton_instrumentation(target, arch.shared_memory_limit(target) or 0):
        yield


def _check_shared_memory(metadata, found: records.Records, target) -> None:
    """Over the target's shared memory, a kernel only fails at launch upstream; say it now,
    with what each region allocates itself, what each boundary puts through shared memory (a
    handoff's buffer, conversion scratch; buffers whose lifetimes do not overlap share space,
    so parts may add up to more than the kernel uses) and the kernel's total."""
    limit = arch.shared_memory_limit(target)
    if limit is None or metadata.shared <= limit:
        return
    parts = [f"r{r.index} {r.function} ({r.language}, {r.call_site}): {r.shared_bytes} B" for r in found.regions]
    crossings = [f"r{b.region} {b.direction} {b.value}: {b.shared_bytes} B ({b.handoff} handoff"
                 + (f", conversion via {b.movement}" if b.conversions else "") + ")"
                 for b in found.boundaries if b.shared_bytes]
    profiling = ["profiling: this build records Proton scopes, and Proton's per-warp record buffer in shared memory "
                 "counts in the total; ask for a smaller one (profiling(..., mode='default:buffer_size=N'))"]
    raise shared_memory_error(metadata.name, metadata.shared, targets.name_of(target), limit, [
        "per region: " + ("; ".join(parts) if parts else "none"),
        "per boundary: " + ("; ".join(crossings) if crossings else "none through shared memory"),
        *(profiling if getattr(metadata, "profile_scratch_size", 0) else [])])


def stitched_ir(kernel, signature: dict, constexprs: dict | None = None, target: str | GPUTarget = "sm90a", *,
                boundaries: str | None = None, instrument_regions: bool | None = None, loops: str | None = None,
                aligned_pointers: bool = True, divisible=(), **options) -> str:
    """The kernel's module right after stitching, before the backend's pipeline (Gluon's),
    as text: every region inlined, boundaries folded. With ``instrument_regions`` each region
    instance is bracketed by a Proton ``proton.record`` start/end pair, as under Proton's
    instrumentation mode, with regions in pipelined loops timed per ``loops``
    (``interop.instrumentation.instrument``). Settings not given are the enclosing blocks', as in ``compile``."""
    constexprs = dict(constexprs or {})
    gpu_target = request.check_request(kernel, signature, constexprs, target, options)
    settings = setting.resolve(boundaries=boundaries, instrument_regions=instrument_regions, loops=loops)
    source = hybrid_source(kernel, signature, constexprs, aligned_pointers, divisible, settings)
    backend = make_backend(gpu_target)
    options = backend.parse_options(options)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    instrument.load_dialect(context)
    stages: dict = {}
    backend.add_stages(stages, options, source.language)
    module = source.make_ir(gpu_target, options, backend.get_codegen_implementation(options),
                            backend.get_module_map(), context)
    if isinstance(source, HybridTritonSource):   # Triton's ttir and ttgir, then the Gluon regions
        module = stages["ttgir"].stitched(stages["ttir"](module, {}), {})
    return str(module)


def hybrid_source(kernel, signature: dict, constexprs: dict, aligned_pointers: bool, divisible=(),
                  settings: BuildSettings | None = None):
    """The ``ASTSource`` for ``kernel``'s host language, specialized like Triton's JIT would, with
    its build settings (by default the enclosing blocks')."""
    full_signature, attrs = specialization(kernel, signature, constexprs, aligned_pointers, divisible)
    source_class = HybridGluonSource if kernel.is_gluon() else HybridTritonSource
    return source_class(kernel, full_signature, constexprs, attrs, settings)


def specialization(kernel, signature: dict, constexprs: dict, aligned_pointers: bool = True,
                   divisible=()) -> tuple[dict, dict]:
    """The full ``ASTSource`` signature (constexprs as ``"constexpr"``) and specialization attrs
    (16-byte divisibility of pointer arguments, as Triton's JIT gives aligned tensors, and
    divisibility by 16 of the integer arguments named in ``divisible``, as it gives such values)."""
    full_signature = {name: ("constexpr" if name in constexprs else signature[name]) for name in kernel.arg_names
                      if name in constexprs or name in signature}
    missing = [name for name in kernel.arg_names if name not in full_signature]
    if missing:
        raise TypeError(f"{kernel.__name__}: no signature or constexpr value for argument(s) {', '.join(missing)}")
    wrong = [name for name in divisible if full_signature.get(name, "")[:1] not in ("i", "u")]
    if wrong:
        raise TypeError(f"{kernel.__name__}: divisible names integer arguments; not {', '.join(wrong)}")
    attrs = {(i, ): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if (aligned_pointers and full_signature[name].startswith("*")) or name in divisible}
    return full_signature, attrs
