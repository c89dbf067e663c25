"""One compile of a mixed kernel: what every step reads, and the records the steps build.

A compile has a host and regions in the other language. Its Triton regions (calls from Gluon
code to ``@triton.jit`` functions: ``triton_regions``) and its Gluon regions (calls from Triton
code to ``@gluon.jit`` functions: ``gluon_regions``) are lowered and spliced by their own
modules; this object holds what they share: the MLIR context, backend options, target and
build settings, the regions in call order, the boundaries planned at their call sites, and,
once the pipeline (``interop.pipeline``) has stitched and planned the module, the finished
boundary records.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.walk import called_symbols
from ..boundary import Boundary, PlannedBoundary, layout_of, shape_and_dtype
from ..instrumentation.instrument import Scopes
from ..region import CallSite, Region
from ..setting import BuildSettings


@dataclass
class CompileContext:
    context: object                 # the compile's MLIR context (region modules are built in it)
    options: object                 # the backend's options (num_warps, warp_size, ...)
    target: object                  # triton.backends.compiler.GPUTarget
    settings: BuildSettings
    kernel_arg_attrs: list = field(default_factory=list)   # per runtime kernel argument: its tt.divisibility
    host_language: str = "triton"   # the kernel's own language: "triton" or "gluon"
    regions: list[Region] = field(default_factory=list)
    planned: list[PlannedBoundary] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    host_module: object | None = None   # the kernel's module, set by its code generator (for a failed verify)
    ttir: dict[int, str] = field(default_factory=dict)   # a Triton region's index -> its lowering after Triton's ttir
    scopes: Scopes = field(init=False)   # where Proton scopes go, when the settings instrument regions

    def __post_init__(self) -> None:
        self.scopes = Scopes(self.settings)
        # imported here: each direction's module takes this context
        from ..lowering.gluon_regions import GluonRegions
        from ..lowering.triton_regions import TritonRegions
        self.triton = TritonRegions(self)
        self.gluon = GluonRegions(self)

    def new_region(self, function: str, language: str, call_site: CallSite, specialization: str, *,
                   shared_bytes: int, lines: tuple) -> Region:
        index = len(self.regions)
        region = Region(index=index, function=function, language=language, call_site=call_site,
                        symbol=f"__hybrid_r{index}_{function}", specialization=specialization,
                        shared_bytes=shared_bytes, lines=lines)
        self.regions.append(region)
        return region

    def plan(self, region: Region, direction: str, index: int, value: str, given: str, expected: str,
             **shared) -> None:
        """One boundary to complete after stitching: ``given`` and ``expected`` are the printed
        types on the two sides; ``shared`` holds a shared-memory handoff's fields and reason."""
        shape, dtype = shape_and_dtype(expected)
        self.planned.append(PlannedBoundary(region.index, region.function, direction, index, value, shape, dtype,
                                            layout_of(given), layout_of(expected), given == expected, **shared))

    def keep_called(self, module) -> None:
        """Forget regions whose call was discarded (a loop's dry visit on Triton 3.6). A Triton
        region's placeholder still gets a body: a body-less function must never reach the backend."""
        called = called_symbols(module)
        self.regions = [r for r in self.regions if r.symbol in called]
        kept = {r.index for r in self.regions}
        self.planned = [p for p in self.planned if p.region in kept]

    def triton_ttir(self) -> str | None:
        """The tt IR of the Triton regions as Triton's ``ttir`` stage produced it: one module per
        distinct lowering, after a comment naming the regions it serves (``None``: no Triton region)."""
        served: dict[str, list[Region]] = {}
        for region in self.regions:
            if region.index in self.ttir:
                served.setdefault(self.ttir[region.index], []).append(region)
        if not served:
            return None
        return "".join("// " + "; ".join(f"r{r.index} {r.function} at {r.call_site}" for r in regions) + "\n"
                       + text.rstrip("\n") + "\n" for text, regions in served.items())

    def close(self) -> None:
        """Drop the region modules (empty shells after splicing, or abandoned after an error)."""
        self.triton.close()
