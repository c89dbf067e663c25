"""Boundary records: what crosses between a host and a region, and what it costs.

A boundary is one tensor value crossing a region's signature. At the call site an incoming
tensor is converted to the layout the region's lowering expects (nothing when they agree);
the region's results come back in the layout its lowering returns. After inlining, chains of
conversions across a boundary are folded (``stitching.stitch_passes``) so each
boundary costs at most one ``ttg.convert_layout``; ``conversions`` counts what is left in
the stitched module.
"""
from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, fields

#: Discardable attribute that marks the conversions a boundary introduced, value "<region>:<in|out>:<index>".
TAG = "hybrid.boundary"
#: The reason of an input boundary whose value, a splat constant, was made in the layout the
#: region wanted (``stitching.stitch_passes``): a port reads it to tell its caller.
CONSTANT_IN_PLACE = "a splat constant, made in the layout wanted (no conversion)"
REMADE_IN_PLACE = "index arithmetic, made again in the layout wanted (no conversion)"
#: The reasons of a boundary whose value the other side made in the layout wanted (``stitch``).
MADE_IN_PLACE = (CONSTANT_IN_PLACE, REMADE_IN_PLACE)


@dataclass(frozen=True)
class BoundaryTag:
    """Which boundary a tagged op belongs to: the value of ``TAG``, read and written here only."""
    region: int          # Region.index
    direction: str       # "in" (host -> region) or "out" (region -> host)
    index: int           # position among the flattened arguments or results

    @property
    def text(self) -> str:
        return f"{self.region}:{self.direction}:{self.index}"

    @classmethod
    def parse(cls, text: str) -> "BoundaryTag":
        parts = text.split(":")
        if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in ("in", "out") or not parts[2].isdigit():
            raise ValueError(f"{TAG} = {text!r} is no boundary tag; one reads '<region>:<in|out>:<index>'")
        return cls(int(parts[0]), parts[1], int(parts[2]))


class Folding(enum.Enum):
    """What took a boundary conversion's place when it was folded (``stitch.Folded``)."""
    LOADED = "loaded"              # a shared-memory load in the wanted layout
    STORED = "stored"              # its value stored into shared memory as it came
    CONSTANT = "constant"          # the splat constant made in the wanted layout
    RECOMPUTED = "recomputed"      # the index arithmetic made again in the wanted layout (``remat``)


class Moved(enum.Enum):
    """How a boundary's conversion moved away from the boundary (``stitch.Folded.moved``)."""
    MERGED = "merged"              # past the casts after it, into the host's own conversion (``sinking``)
    NARROWED = "narrowed"          # past the cast that narrows it, still converting (``sinking``)
    ADOPTED = "adopted"            # removed by Triton's passes laying the host out again (``host_relayout``)
    RELOADED = "reloaded"          # the host's load issued again in the wanted layout (``access_layouts``)
    JOINED = "joined"              # past the host's arithmetic, one conversion for several results (``sinking``)


@dataclass(frozen=True)
class Boundary:
    region: int          # Region.index
    function: str        # the region's function
    direction: str       # "in" (host -> region) or "out" (region -> host)
    index: int           # position among the flattened arguments or results
    value: str           # the region's parameter name, or "return[i]"
    shape: tuple
    dtype: str
    from_layout: str
    to_layout: str
    conversions: int     # ttg.convert_layout ops this boundary costs in the stitched module
    reason: str          # why: "layouts agree", "converted", "folded into ...", ...
    # how the value crosses: "convert" (as a value; Triton's conversion, if any, moves it, which
    # ``movement`` describes: registers, shuffles, or through shared scratch) or "shared" (the
    # call site stores it once into a shared buffer the other side reads)
    handoff: str = "convert"
    movement: str = "none"       # what its conversions move: none, registers, shuffles (in warps), shared
    shared_bytes: int = 0        # bytes through shared memory: a handoff's buffer, conversion scratch
    barriers: int = 0            # barriers its conversions need (a shared-memory round trip)
    fences: int = 0              # async-proxy fences a handoff added
    shuffles: int = 0            # warp shuffles per thread its conversions need
    cost: int = 0                # the modelled cost (``interop.boundaries.planner``), on the first boundary it covers

    def to_json(self) -> dict:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Boundary":
        return cls(**{**data, "shape": tuple(data["shape"])})


@dataclass(frozen=True)
class PlannedBoundary:
    """What is known of a boundary where the call is made (code generation, or the splice in a
    Triton host); completed into a ``Boundary`` once the module is stitched and planned."""
    region: int
    function: str
    direction: str
    index: int
    value: str
    shape: tuple
    dtype: str
    from_layout: str
    to_layout: str
    agree: bool                  # the host's type is the one the region wants
    handoff: str = "convert"     # "shared": the call site stores it into a buffer (@hybrid.takes, hybrid.stage)
    shared_bytes: int = 0        # that buffer's bytes
    fences: int = 0              # async-proxy fences the call site added after it
    reason: str | None = None    # why, where the call site already decided it

    @property
    def tag(self) -> str:
        return BoundaryTag(self.region, self.direction, self.index).text

    def boundary_fields(self) -> dict:
        """The fields a ``Boundary`` takes from this record as they are (its reason is decided
        with the rest, ``assemble``)."""
        return {f.name: getattr(self, f.name) for f in fields(Boundary) if f.name != "reason" and hasattr(self, f.name)}


def layout_of(type_text: str) -> str:
    """The encoding of a printed tensor or shared-memory type (``tensor<4x8xf32, #enc>`` and
    ``!ttg.memdesc<4x8xf32, #enc, #smem, mutable>`` -> ``#enc``)."""
    inner = type_text[type_text.index("<") + 1:-1]
    _, _, encoding = inner.partition(", ")
    if type_text.startswith("!ttg.memdesc"):
        encoding = encoding.rsplit(", #ttg.shared_memory", 1)[0].rsplit(", #smem", 1)[0]
    return encoding or "-"


def shape_and_dtype(type_text: str) -> tuple[tuple, str]:
    dims = type_text[type_text.index("<") + 1:-1].partition(", ")[0].split("x")
    return tuple(int(d) for d in dims[:-1]), dims[-1]


#: Bits an element takes in registers and shared memory, by MLIR type (an ``i1`` a byte).
_BITS = {"i1": 8, "i8": 8, "i16": 16, "f16": 16, "bf16": 16, "i32": 32, "f32": 32, "i64": 64, "f64": 64}


def element_bits(dtype: str) -> int:
    """Bits an element of MLIR type ``dtype`` takes in registers and shared memory (an ``i1`` a byte)."""
    return 8 if dtype.startswith("f8") else _BITS.get(dtype, 32)


def tile_bytes(shape, bits: int) -> int:
    """Bytes of a ``shape`` tile of ``bits``-bit elements."""
    return math.prod(shape) * bits // 8


def is_shared(type_text: str) -> bool:
    return type_text.startswith("!ttg.memdesc")
