"""The last step of a compile's own work: a module with every region spliced in becomes one
stitched kernel with its boundary records.

``assemble`` inlines the regions, connects their results, folds boundary conversion chains and
verifies (``stitch``), runs a Triton host's pure regions that an opaque branch still guards
unconditionally (``speculate``), sinks a Triton host's tensor-memory loads to their uses as Triton's own
pipeline does (``host_relayout.interleave_tmem``), lets the planner choose how each boundary value moves (``planner``),
completes each ``PlannedBoundary`` into a ``Boundary`` from what is left in the module, and
places the loop and kernel Proton scopes when regions are instrumented (``instrument``).
"""
from __future__ import annotations

import contextlib

from . import buffer_access, convert_in, host_relayout
from ..targets import arch
from ..instrumentation import instrument, timing
from ..boundaries import movement, planner, reasons
from ..stitching import speculate, stitch
from ..boundary import Boundary, Folding, Moved, PlannedBoundary, layout_of
from ..errors import RegionError
from ..boundaries.scratch import ScratchProbe
from ..ir.canonicalize import canonicalize
from ..ir.verify import verify
from ..triton.bindings import gluon_ir


#: Within ``recording_spliced``: each Triton host's module as printed once its Gluon regions are
#: spliced in, before they are inlined (the kernel still calls each one).
_spliced: list[str] | None = None


@contextlib.contextmanager
def recording_spliced():
    """Within the block, the text of every Triton host with Gluon calls is appended, as ``assemble``
    gets it, to the list this yields: what a whole-kernel port keeps those calls from."""
    global _spliced
    outer, _spliced = _spliced, []
    try:
        yield _spliced
    finally:
        _spliced = outer


@timing.timed("stitching")
def assemble(cc, module) -> None:
    """Inline every spliced region of ``module``, connect results, fold boundary conversions,
    verify, plan, and set ``cc.boundaries``."""
    if _spliced is not None and cc.host_language == "triton" and cc.regions:
        _spliced.append(str(module))
    try:
        stitch.inline(module, cc.context)
        stitch.connect_results(module, cc.context)
        folded = stitch.fold_boundary_conversions(module, cc.context, _into_triton_code(cc))
        if cc.host_language == "triton":   # (a Gluon host's two: in finish_gluon_host and convert_in.fold)
            buffer_access.resolve(module, cc.context, cc.target)
            # its Gluon regions' entry conversions left are plain ones now
            convert_in.untag(module, gluon_ir.GluonOpBuilder(cc.context))
            # a pure region its opaque branch (a pipeliner's predicate folded in) still guards
            if speculate.poison_branches(module, gluon_ir.GluonOpBuilder(cc.context)):
                canonicalize(module, cc.context)
            # Triton's late placement, made while the Gluon calls were opaque
            host_relayout.interleave_tmem(module, cc.context, cc.target)
        stitch.check_no_markers(module)
    except (stitch.StitchError, RuntimeError) as exc:
        names = ", ".join(r.function for r in cc.regions) or "?"
        site = str(cc.regions[0].call_site) if cc.regions else "?"
        raise RegionError(names, site, f"stitching failed: {exc}") from exc
    probe = ScratchProbe(cc.context, cc.target, cc.options)
    try:
        choices, live = planner.plan(module, cc.context, probe, cc.settings.boundaries,
                                     arch.shared_memory_limit(cc.target))
    except (ValueError, RuntimeError) as exc:
        raise RegionError(", ".join(r.function for r in cc.regions), str(cc.regions[0].call_site),
                          f"planning the boundaries failed: {exc}") from exc
    by_tag = {t: choice for choice in choices for t in choice.tags}
    folded = cc.relaid.combined(folded)
    cc.boundaries = [_completed(planned, live, folded, by_tag) for planned in cc.planned]
    if cc.scopes.on and cc.regions:
        instrument.bracket(module, gluon_ir.GluonOpBuilder(cc.context), cc.scopes.timed_loops)
        verify(module, "placing the Proton scopes")


def _into_triton_code(cc) -> set[str]:
    """The boundaries whose conversion feeds Triton code (a Triton region's inputs, a Gluon
    region's results), whose layouts Triton chose and may change; Gluon code keeps its author's."""
    language = {r.index: r.language for r in cc.regions}
    return {p.tag for p in cc.planned
            if p.region in language and (language[p.region] == "triton") == (p.direction == "in")}


def _completed(planned: PlannedBoundary, live: dict, folded: stitch.Folded, choices: dict) -> Boundary:
    """``planned`` with what the stitched, planned module says of it: the planner's handoff, a
    load folded into it, the conversions left and what they move, and why."""
    fields = planned.boundary_fields()
    boundary_tag = planned.tag
    remaining = live.get(boundary_tag, [])
    choice = choices.get(boundary_tag)
    narrowed = folded.moved.get(boundary_tag) is Moved.NARROWED
    if choice is not None and choice.way == "handoff":
        owner = choice.tags[0] == boundary_tag
        fields.update(handoff="shared", movement="shared", shared_bytes=choice.shared_bytes if owner else 0,
                      barriers=int(owner), cost=choice.cost if owner else 0)
        reason = choice.reason if owner else f"loaded from the buffer boundary {choice.tags[0]} handed off"
        return Boundary(**fields, conversions=len(remaining), reason=reason + reasons.NARROWED * narrowed)
    fact = reasons.free(folded.facts(boundary_tag)) if not remaining else None
    if planned.reason is not None:
        reason = planned.reason
    elif fact is not None:
        reason = reasons.FREE[fact]
        if fact is Folding.LOADED:
            fields["handoff"] = "shared"
    elif planned.agree:
        reason = "layouts agree"
    elif not remaining:
        reason = "folded away (the neighbouring conversion already yields the needed layout)" \
            if planned.direction == "in" else "folded into the host's own conversion"
    else:
        reason = "converted"
        first = remaining[0]
        fields["from_layout"], fields["to_layout"] = layout_of(first.source), layout_of(first.result)
    if remaining:   # what the conversions move: the costliest decides the kind, bytes and barriers add up
        moves = [c.movement for c in remaining]
        fields["movement"] = max((m.kind for m in moves), key=movement.ORDER.index)
        fields["shared_bytes"] = fields.get("shared_bytes", 0) + sum(m.shared_bytes for m in moves)
        fields["barriers"] = sum(m.barriers for m in moves)
        fields["shuffles"] = sum(m.shuffles for m in moves)
        fields["cost"] = choice.cost if choice is not None and choice.tags[0] == boundary_tag else 0
        reason += (f" ({fields['movement']})" if choice is None else f": {choice.reason}") + reasons.NARROWED * narrowed
    return Boundary(**fields, conversions=len(remaining), reason=reason)
