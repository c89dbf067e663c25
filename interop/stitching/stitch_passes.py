"""The stitch's passes: every region spliced in becomes one kernel whose boundary conversions fold.

Each takes the compile's ``state.Stitch`` and the module (``runner.Pass``); a fold returns
whether it replaced anything (the runner verifies only then). The folds touch
only a boundary's conversions (tagged), never ones the Gluon author wrote; what each replaced
is added to ``state.folded`` (the boundary records say why a conversion is gone from it). The
canonicalizer after the folds removes what they left dead.
"""
from __future__ import annotations

import dataclasses

from . import remat, sinking, stagings, stitch
from ..ir import canonicalize as ir_canonicalize
from ..ir.walk import calls_in_loops
from .state import Stitch
from ..triton.bindings import gluon_ir


def inline(state: Stitch, module) -> None:
    """Gluon's inliner: every spliced region's body into its call sites (noting first whether a
    call sits in the host's loop: ``hoist invariants``)."""
    state.region_in_loop = calls_in_loops(module, {r.symbol for r in state.regions})
    stitch.inline(module, state.context)


def connect_results(state: Stitch, module) -> None:
    stitch.connect_results(module, state.context)


def fold_chains(state: Stitch, module) -> bool:
    return stitch.fold_chains(module, gluon_ir.GluonOpBuilder(state.context))


def canonicalize(state: Stitch, module) -> None:
    """Gluon's canonicalizer: deletes the conversions the rewrites left dead, folds constants."""
    ir_canonicalize.canonicalize(module, state.context)


def hoist_invariants(state: Stitch, module) -> None:
    """Pure ops a Triton host's loop does not change, moved before it. What the regions brought
    into the loop never went through Triton's loop-invariant code motion (its ``make_ttir`` runs
    it before layouts; Gluon's pipeline has none): a port's index arithmetic on the kernel's
    scalars stayed in every iteration of the persistent matmul's tile loop. Only where a region
    was inlined into a loop of the host: elsewhere the loops are Triton's own, or the regions',
    which Triton left as they are at ttgir (the descriptor persistent matmul's tile loop ported
    whole for sm80 builds to 8 more instructions hoisted)."""
    ir_canonicalize.hoist_invariants(module, state.context)


def inlined_into_a_loop(state: Stitch) -> bool:
    return state.region_in_loop


def fold_constants(state: Stitch, module) -> bool:
    """A boundary's conversion of a splat constant becomes the constant in its layout."""
    constants = stitch.fold_constant_conversions(module, gluon_ir.GluonOpBuilder(state.context))
    _add(state, constants=frozenset(constants))
    return bool(constants)


def rematerialize(state: Stitch, module) -> bool:
    """A boundary's conversion of index arithmetic becomes the arithmetic made in its layout."""
    recomputed, changed = remat.recompute_boundary_conversions(module, gluon_ir.GluonOpBuilder(state.context))
    _add(state, recomputed=frozenset(recomputed - state.folded.constants))
    return changed


def join_conversions(state: Stitch, module) -> bool:
    """Conversions into Triton code moved past the arithmetic on them, where fewer remain."""
    return _moved(state, module, sinking.join_past_arithmetic)


def sink_casts(state: Stitch, module) -> bool:
    """A conversion into Triton code (whose layouts Triton chose) moved past the casts after it."""
    return _moved(state, module, sinking.sink_past_casts)


def _moved(state: Stitch, module, move) -> bool:
    """``move`` (a ``sinking`` rewrite) over the boundaries into Triton code no fold took yet."""
    folded = state.folded
    movable = into_triton_code(state) - folded.constants - folded.recomputed
    moved = move(module, gluon_ir.GluonOpBuilder(state.context), movable)
    _add(state, moved=moved)
    return bool(moved)


def fold_shared_loads(state: Stitch, module) -> bool:
    loaded = stitch.fold_into_shared_loads(module, gluon_ir.GluonOpBuilder(state.context))
    _add(state, loaded=frozenset(loaded))
    return bool(loaded)


def fold_shared_stores(state: Stitch, module) -> bool:
    stored = stitch.fold_into_shared_stores(module, gluon_ir.GluonOpBuilder(state.context))
    _add(state, stored=frozenset(stored))
    return bool(stored)


def merge_stagings(state: Stitch, module) -> bool:
    """A value staged into shared memory twice, never written after, staged once (``stagings``)."""
    merged = stagings.merge_stagings(module)
    state.merged_stagings += merged
    return merged > 0


def folded_any(state: Stitch) -> bool:
    """Whether a fold replaced a conversion or a staging (then the canonicalizer has dead ops to delete)."""
    folded = state.folded
    return bool(folded.loaded or folded.stored or folded.constants or folded.recomputed or folded.moved
                or state.merged_stagings)


def into_triton_code(state: Stitch) -> set[str]:
    """The boundaries whose conversion feeds Triton code (a Triton region's inputs, a Gluon
    region's results), whose layouts Triton chose and may change; Gluon code keeps its author's."""
    language = {r.index: r.language for r in state.regions}
    return {p.tag for p in state.compile.planned
            if p.region in language and (language[p.region] == "triton") == (p.direction == "in")}


def _add(state: Stitch, **found) -> None:
    state.folded = dataclasses.replace(state.folded, **found)
