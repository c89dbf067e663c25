"""The compile's own passes, in order: what happens to a mixed kernel between its host's
generation and the backend, read top to bottom as Triton's ``make_ttgir`` reads.

A Triton host runs ``TRITON_HOST`` inside Triton's ``ttgir`` stage, after Triton's own passes
(``entry.stages_hook``); Gluon's ``ttgir`` pipeline follows. A Gluon host runs ``GLUON_HOST``
after its code generation, before any Gluon pass (Gluon's SCCP must not see a placeholder).
Every pass takes the compile's ``Stitch`` and the module, and may return whether it changed the
module; the runner (``stitching.runner``) times it, verifies after it unless it said False (and at
the end of the list where the last pass run was not verified), names it in any failure and dumps
the module after it on request (``HYBRID_DUMP_AFTER``). A pass with a ``when`` runs only where that holds for the compile.
"""
from __future__ import annotations

from .lowering import assemble, buffer_access, convert_in, gluon_regions, host_relayout, triton_regions
from .lowering.host_relayout import relaying
from .lowering.triton_regions import splicing
from .stitching import runner, speculate, stitch_passes
from .stitching.runner import Pass
from .stitching.state import Stitch

RELAYOUT = "host relayout"     # the timing stage of the host's second layout round
PLANNING = "boundary planning"

TRITON_HOST: list[Pass] = [
    Pass("splice Gluon calls", gluon_regions.splice_calls),
    Pass("hide region bodies", host_relayout.hide_bodies, RELAYOUT, relaying),
    Pass("fold opaque branches", host_relayout.fold_opaque_branches, RELAYOUT, relaying),
    Pass("sink result casts", host_relayout.sink_result_casts, RELAYOUT, relaying),
    Pass("issue loads in call layouts", host_relayout.issue_loads, RELAYOUT, relaying),
    Pass("lay out the host", host_relayout.lay_out, RELAYOUT, relaying),
    Pass("transpose in thread", host_relayout.transpose_in_thread, RELAYOUT, relaying),
    Pass("tag boundaries", host_relayout.tag_boundaries, RELAYOUT, relaying),
    Pass("load stored results early", host_relayout.load_stored_early, RELAYOUT, relaying),
    Pass("restore region bodies", host_relayout.restore_bodies, RELAYOUT, relaying),
    Pass("relocate scopes", gluon_regions.relocate_scopes),
    Pass("keep called regions", assemble.keep_called),
    Pass("splice Triton calls", triton_regions.splice_calls),
    Pass("inline", stitch_passes.inline),
    Pass("connect results", stitch_passes.connect_results),
    Pass("fold chains", stitch_passes.fold_chains),
    Pass("canonicalize", stitch_passes.canonicalize),
    Pass("fold constants", stitch_passes.fold_constants),
    Pass("rematerialize", stitch_passes.rematerialize),
    Pass("join conversions", stitch_passes.join_conversions),
    Pass("sink casts", stitch_passes.sink_casts),
    Pass("fold shared loads", stitch_passes.fold_shared_loads),
    Pass("fold shared stores", stitch_passes.fold_shared_stores),
    Pass("merge stagings", stitch_passes.merge_stagings),
    Pass("canonicalize folds", stitch_passes.canonicalize, when=stitch_passes.folded_any),
    Pass("hoist invariants", stitch_passes.hoist_invariants, when=stitch_passes.inlined_into_a_loop),
    Pass("buffer access", buffer_access.resolve),
    Pass("untag entry conversions", convert_in.untag),
    Pass("speculate", speculate.speculate),
    Pass("interleave tmem", host_relayout.interleave_tmem, RELAYOUT, markers_gone=True),
    Pass("plan boundaries", assemble.plan_boundaries, PLANNING),
    Pass("complete boundaries", assemble.complete_boundaries),
    Pass("place scopes", assemble.place_scopes, when=assemble.instrumented),
]

GLUON_HOST: list[Pass] = [
    Pass("make entry conversions in place", convert_in.make_in_place),
    Pass("buffer access", buffer_access.resolve),
    Pass("keep called regions", assemble.keep_called),
    Pass("splice Triton calls", triton_regions.splice_calls, when=splicing),
    Pass("inline", stitch_passes.inline, when=splicing),
    Pass("connect results", stitch_passes.connect_results, when=splicing),
    Pass("fold chains", stitch_passes.fold_chains, when=splicing),
    Pass("canonicalize", stitch_passes.canonicalize, when=splicing),
    Pass("fold constants", stitch_passes.fold_constants, when=splicing),
    Pass("rematerialize", stitch_passes.rematerialize, when=splicing),
    Pass("join conversions", stitch_passes.join_conversions, when=splicing),
    Pass("sink casts", stitch_passes.sink_casts, when=splicing),
    Pass("fold shared loads", stitch_passes.fold_shared_loads, when=splicing),
    Pass("fold shared stores", stitch_passes.fold_shared_stores, when=splicing, markers_gone=True),
    Pass("canonicalize folds", stitch_passes.canonicalize,
         when=lambda state: splicing(state) and stitch_passes.folded_any(state)),
    Pass("plan boundaries", assemble.plan_boundaries, PLANNING, when=splicing),
    Pass("complete boundaries", assemble.complete_boundaries, when=splicing),
    Pass("place scopes", assemble.place_scopes, when=lambda state: splicing(state) and assemble.instrumented(state)),
]


def run(cc, module) -> None:
    """The passes of ``cc``'s host language on ``module``; ``cc.boundaries`` is set from them."""
    runner.run(TRITON_HOST if cc.host_language == "triton" else GLUON_HOST, Stitch(cc), module)
