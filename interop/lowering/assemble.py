"""The boundary records: the stitched module planned, each ``PlannedBoundary`` completed.

The passes at the end of both pipelines (``interop.pipeline``): the planner chooses how each
boundary value moves (``planner``), each ``PlannedBoundary`` becomes a ``Boundary`` from what is
left in the module and what the folds before replaced, and the loop and kernel Proton scopes are
placed when regions are instrumented (``instrument``).
"""
from __future__ import annotations

import contextlib

from ..targets import arch
from ..instrumentation import instrument
from ..boundaries import movement, planner, reasons
from ..stitching import runner, stitch, stitch_passes
from ..boundary import Boundary, Folding, PlannedBoundary, layout_of
from ..boundaries.scratch import ScratchProbe
from ..triton.bindings import gluon_ir
from ..stitching.state import Stitch


@contextlib.contextmanager
def recording_spliced():
    """Within the block, the text of every Triton host with Gluon calls is appended to the list
    this yields, as the stitch gets it (its regions spliced in, the kernel still calling each one):
    what a whole-kernel port keeps those calls from."""
    spliced: list[str] = []

    def see(state: Stitch, module) -> None:
        if state.host_language == "triton" and state.regions:
            spliced.append(str(module))

    with runner.observing(runner.Observer(stitch_passes.inline, see, before=True)):
        yield spliced


def keep_called(state: Stitch, module) -> bool:
    """The regions whose call was discarded forgotten (``CompileContext.keep_called``; the module is read)."""
    state.compile.keep_called(module)
    return False


def plan_boundaries(state: Stitch, module) -> bool:
    """How each boundary value moves (Triton's conversion or a shared-memory handoff), the
    handed-off ones rewritten (``planner``). Whether one was (else the module is as it was)."""
    cc = state.compile
    probe = ScratchProbe(cc.context, cc.target, cc.options)
    state.choices, state.live = planner.plan(module, cc.context, probe, cc.settings.boundaries,
                                             arch.shared_memory_limit(cc.target))
    return any(choice.way == "handoff" for choice in state.choices)


def complete_boundaries(state: Stitch, module) -> bool:
    """Each planned boundary completed into the compile's ``Boundary`` records (the module is read)."""
    by_tag = {t: choice for choice in state.choices for t in choice.tags}
    folded = state.relaid.combined(state.folded)
    state.compile.boundaries = [_completed(planned, state.live, folded, by_tag) for planned in state.compile.planned]
    return False


def instrumented(state: Stitch) -> bool:
    return bool(state.compile.scopes.on and state.regions)


def place_scopes(state: Stitch, module) -> None:
    """The loop and kernel Proton scopes (``instrument.bracket``)."""
    instrument.bracket(module, gluon_ir.GluonOpBuilder(state.context), state.compile.scopes.timed_loops)


def _completed(planned: PlannedBoundary, live: dict, folded: stitch.Folded, choices: dict) -> Boundary:
    """``planned`` with what the stitched, planned module says of it: the planner's handoff, a
    load folded into it, the conversions left and what they move, and why."""
    fields = planned.boundary_fields()
    boundary_tag = planned.tag
    remaining = live.get(boundary_tag, [])
    choice = choices.get(boundary_tag)
    moved = reasons.STILL_CONVERTING.get(folded.moved.get(boundary_tag), "")
    if choice is not None and choice.way == "handoff":
        owner = choice.tags[0] == boundary_tag
        fields.update(handoff="shared", movement="shared", shared_bytes=choice.shared_bytes if owner else 0,
                      barriers=int(owner), cost=choice.cost if owner else 0)
        reason = choice.reason if owner else f"loaded from the buffer boundary {choice.tags[0]} handed off"
        return Boundary(**fields, conversions=len(remaining), reason=reason + moved)
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
        reason += (f" ({fields['movement']})" if choice is None else f": {choice.reason}") + moved
    return Boundary(**fields, conversions=len(remaining), reason=reason)
