"""Why a boundary costs no conversion, by what folding did to it: one table, so that each fact
of ``stitch.Folded`` has its reason in one place and a new fact cannot go without one."""
from __future__ import annotations

from ..boundary import CONSTANT_IN_PLACE, REMADE_IN_PLACE, Folding, Moved

#: What took a boundary's conversions away (``stitch.Folded.facts``) -> the boundary's reason.
FREE: dict[Folding | Moved, str] = {
    Folding.LOADED: "loaded from shared memory straight in the region's layout (no conversion)",
    Folding.STORED: "stored into the host's shared buffer as the region produced it (no conversion)",
    Folding.CONSTANT: CONSTANT_IN_PLACE,
    Folding.RECOMPUTED: REMADE_IN_PLACE,
    Moved.MERGED: ("moved past the casts after it into the host's own conversion there, as the all-Triton kernel "
                   "converts (where Triton's passes keep that conversion)"),
    Moved.RELOADED: ("the host loads the tile in the layout the region takes: its load issued again there, as "
                     "Triton rematerializes inside a kernel"),
    Moved.JOINED: ("moved past the host's arithmetic on it, which runs in the region's layout: one conversion "
                   "of the arithmetic's value for several results, as the all-Triton kernel converts"),
    Moved.ADOPTED: ("the host takes the region's layout: Triton's layout passes, run again around the call, "
                    "removed the conversion"),
}
#: What a conversion moved but still converting adds to its boundary's reason.
STILL_CONVERTING: dict[Moved, str] = {
    Moved.NARROWED: "; moved past the cast that narrows it",
    Moved.JOINED: "; moved past the host's arithmetic on it, one conversion for several results",
}


def free(facts: list[Folding | Moved]) -> Folding | Moved | None:
    """The first of ``facts`` that explains a boundary without conversions (None: none does)."""
    return next((fact for fact in facts if fact in FREE), None)
