"""A Triton host laid out again around its Gluon calls, once their result layouts are known.

Triton's ``ttgir`` stage chose the host's layouts while each Gluon call was opaque
(``triton_host``), so the code after a call takes the region's result in a layout picked without
it: on AMD a blocked layout the result is converted to before its store, where all-Triton
stores straight from the MFMA layout (``optimize_epilogue`` ran while the result was opaque).

Once the calls are spliced, each call's results are typed by its callee's signature, and a
``tt.call`` is an op Triton's layout passes cannot re-lay out; but a call's result is no anchor
for them (loads, stores, dots and function arguments are), so while they run each tile a call
returns (in a loop too) is held by a stand-in load (``anchors``): the host's code follows it as
all-Triton's follows its own tile load. Its passes (``interop.pipeline``, ``hide_bodies`` to
``restore_bodies``) move the body of every function but the host kernel into a holder module, so that the passes see the host alone and nothing of a Gluon region (whose ops keep
exactly its author's layouts); folds the emptied boundary ``scf.if`` (Triton's canonicalizer)
and moves each result's conversion past the host's casts (``sinking``), so that the passes find
the epilogue all-Triton would have (an ``acc.to(fp16)`` in the region's layout, then the host's
own conversion); runs the passes ``make_ttgir`` runs to place the host's conversions around its
anchors (``compat.add_host_relayout``); tags the conversions then left on a call's operands or
results as that boundary's; and moves the bodies back. The host's code after a call adopts the
region's layout where Triton finds that cheaper, as around any anchor. Before the passes, a tile
the host loads and converts for a call is loaded in the call's layout instead, and after them a
store of a value they left converted is issued in the value's layout (``access_layouts``): the
rematerialization Triton does inside a kernel, which its passes do not do across a call. On AMD
a result the host stores to shared memory for a dot is then transposed in registers as
``make_ttgir`` transposes a loaded tile (``_transpose_in_thread``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..targets import arch
from ..boundaries import movement
from ..boundary import TAG, BoundaryTag, Moved
from ..ir import diagnostics
from ..ir.copy import copier, copy_module
from ..ir.uses import uses
from ..ir.walk import result_types
from ..stitching import access_layouts, anchors, sinking, stitch
from ..triton import compat
from ..triton.bindings import gluon_ir, ir, passes
from ..stitching.state import Stitch

#: The ops a boundary leaves in the host for a Gluon call that Triton's layout passes may remake.
_BOUNDARY_OPS = ("ttg.convert_layout", "ttg.local_load")
_IN_THREAD_TRANSPOSE = "amdg.in_thread_transpose"


@dataclass
class Relayout:
    """The relayout under way, between ``hide_bodies`` and ``restore_bodies``: what its passes
    share. ``regions``: the symbol of each Gluon function called -> its region's index."""
    regions: dict[str, int]
    before: set[str]           # the boundary tags the host's conversions had before
    held: list                 # (function, (holder module, holder function)) per body moved out
    operands: dict[int, str] = field(default_factory=dict)   # the calls' operands before the casts sank
    moved: dict[str, Moved] = field(default_factory=dict)   # ``sinking``: tag -> MERGED / NARROWED
    issued: set[str] = field(default_factory=set)   # tags whose tile the host loads again in the wanted layout
    stored: set[str] = field(default_factory=set)   # tags whose buffer's loads moved up to the store


def relaying(state: Stitch) -> bool:
    """Whether the host has Gluon calls to lay out around (none: all in untaken branches, and the
    host is left as Triton made it)."""
    return bool(state.compile.gluon.symbols)


def hide_bodies(state: Stitch, module) -> None:
    """Every body but the host kernel's moved into a holder module, so that Triton's passes see
    the host alone and nothing of a Gluon region (whose ops keep exactly its author's layouts)."""
    before = _tags(module)
    state.relayout = Relayout(dict(state.compile.gluon.symbols), before, _hide_bodies(module, state.context))


def fold_opaque_branches(state: Stitch, module) -> None:
    """Triton's canonicalizer: folds each boundary's emptied ``scf.if``, drops the markers."""
    _run(module, state.context, passes.common.add_canonicalizer)


def sink_result_casts(state: Stitch, module) -> bool:
    """Each result's conversion moved past the host's casts (``sinking``), so that the layout
    passes find the epilogue all-Triton would have: a cast in the region's layout, then the host's
    own conversion."""
    relayout = state.relayout
    results, relayout.operands = _call_edges(module, relayout.regions)
    relayout.moved = sinking.sink_past_casts(module, gluon_ir.GluonOpBuilder(state.context), set(results.values()))
    return bool(relayout.moved)


def issue_loads(state: Stitch, module) -> bool:
    """A tile the host loads and converts for a call, loaded in the call's layout instead
    (``access_layouts``)."""
    relayout = state.relayout
    relayout.issued = access_layouts.issue_in_wanted_layouts(module, gluon_ir.GluonOpBuilder(state.context),
                                                             set(relayout.operands.values()))
    return bool(relayout.issued)


def lay_out(state: Stitch, module) -> None:
    """Triton's layout passes on the host, with the calls' results (and AMD buffer loads) held as
    anchors where copies laid out so show it moves fewer bytes (``_holds``). One step: the
    choice is made by laying out copies the same way, and the copy chosen becomes the host's body."""
    callees = set(state.relayout.regions)
    anchored, loads_held, laid = _holds(module, state.context, state.target, callees)
    if laid is None:
        _lay_out(module, state.context, state.target, callees, anchored, loads_held)
    else:   # a copy laid out so already: the same passes on the same IR are not run again
        _adopt(module, state.context, laid)


def transpose_in_thread(state: Stitch, module) -> bool:
    return _transpose_in_thread(module, state.context, state.target, set(state.relayout.regions))


def tag_boundaries(state: Stitch, module) -> None:
    _tag_boundaries(module, state.context, state.relayout.regions)


def load_stored_early(state: Stitch, module) -> bool:
    """A result stored into shared memory as it came: the host's loads of that buffer moved up to
    the store (``stitch.load_stored_values_early``)."""
    relayout = state.relayout
    relayout.stored = stitch.load_stored_values_early(module, gluon_ir.GluonOpBuilder(state.context),
                                                      _call_edges(module, relayout.regions)[0])
    return bool(relayout.stored)


def restore_bodies(state: Stitch, module) -> None:
    """The bodies back, and what became of the boundaries' conversions in ``state.relaid``: moved
    past the host's casts; removed by the layout passes (``Moved.ADOPTED``: the host takes the
    region's layout); a tile the host loaded, loaded again in the layout the region takes
    (``Moved.RELOADED``); or, stored into shared memory as it came, its loads moved up to the store."""
    relayout, state.relayout = state.relayout, None
    for function, holder in relayout.held:
        stitch.splice(module, function, *holder)
    moved = relayout.moved
    gone = {t: Moved.RELOADED if t in relayout.issued else Moved.ADOPTED
            for t in relayout.before - _tags(module) - relayout.stored if moved.get(t) is not Moved.MERGED}
    state.relaid = stitch.Folded(loaded=frozenset(), stored=frozenset(relayout.stored), constants=frozenset(),
                                 recomputed=frozenset(), moved={**moved, **gone})


def interleave_tmem(state: Stitch, module) -> bool | None:
    """The stitched Triton host's tensor-memory loads sunk to their uses, as Triton's own
    ``make_ttgir`` sinks the all-Triton kernel's: it ran on the host while its Gluon calls were
    opaque, so a region's last ``tmem.load`` (a ported MMA loop's accumulator) stayed ahead of the
    host's address arithmetic for the store, holding 128 registers a thread across it (upstream
    matmul's K loop, ported, on sm100a: 5214 SASS instructions against 4765). False elsewhere."""
    if state.target not in arch.SM100:   # (the targets with tensor memory)
        return False
    _run(module, state.context, compat.add_tmem_interleave)
    return None


def _lay_out(module, context, target, callees: set[str], anchored: bool, loads_held: bool) -> None:
    """Triton's layout passes on the host (the calls' results held as anchors where ``anchored``,
    its AMD buffer loads where ``loads_held``), then each store of a value they left converted
    issued in the value's layout."""
    builder = gluon_ir.GluonOpBuilder(context)
    stand_ins = anchors.hold(module, builder, callees) if anchored else []
    loads_held = loads_held and anchors.hold_buffer_loads(module, builder) > 0
    _run(module, context, lambda pm: compat.add_host_relayout(pm, target))
    if access_layouts.issue_stores_in_value_layouts(module, builder):
        _run(module, context, passes.common.add_canonicalizer)   # deletes the stores masked off
        _run(module, context, lambda pm: compat.add_host_relayout(pm, target))
    if stand_ins or loads_held:
        anchors.release(module, builder, stand_ins)
        if loads_held:
            anchors.release_buffer_loads(module)
        _run(module, context, passes.common.add_canonicalizer)   # deletes the stand-ins


def _transpose_in_thread(module, context, target, callees: set[str]) -> bool:
    """AMD's in-thread transpose of the tiles the host stores to shared memory for a dot, for the
    calls' results. ``make_ttgir`` runs it (on gfx942) while the calls are opaque, and its pattern
    is a global load stored for a dot operand: a ported tile load the host stages was stored
    element by element, unswizzled, where all-Triton transposes the tile in registers and stores
    vectors along K into a rotating swizzle. Run with each result held by a stand-in load, on a
    copy first: kept only where it leaves every stand-in in its result's layout (a port written
    from the kernel's IR has the layout the pass gives the load; another would need a conversion);
    kept, the copy becomes the host's body (``_adopt``), the pass not run again. Whether kept."""
    if not compat.in_thread_transpose_enabled(target) or not anchors.holdable(module, callees):
        return False
    trial = copy_module(module, context)
    if not _transposed_in_thread(trial, context, callees):
        return False
    _adopt(module, context, trial)
    return True


def _transposed_in_thread(module, context, callees: set[str]) -> bool:
    """The pass on ``module`` with the calls' results held; whether it transposed a tile and left
    every stand-in in its layout."""
    builder = gluon_ir.GluonOpBuilder(context)
    before = _count(module, _IN_THREAD_TRANSPOSE)
    held = anchors.hold(module, builder, callees)
    _run(module, context, compat.add_in_thread_transpose)
    kept = anchors.release(module, builder, held)
    _run(module, context, passes.common.add_canonicalizer)   # deletes the stand-ins
    return kept and _count(module, _IN_THREAD_TRANSPOSE) > before


def _count(module, name: str) -> int:
    return len(uses(module, lambda op: op.get_name() == name)[1])


def _holds(module, context, target, callees: set[str]) -> tuple[bool, bool, object | None]:
    """Whether to lay the host out with the calls' results held as anchors, and with its AMD buffer
    loads held too, each decided by laying out copies (each copy laid out once, for both); and the
    copy laid out as decided (None where neither question needed a copy).
    - The calls' results, where that moves fewer bytes between threads: Triton's layout pass
      settles a conflict between anchors by rules, not cost, and a result in a narrow layout (a
      port's one element a thread) would drag the host's vector loads and stores into it.
    - Its buffer loads (``anchors.buffer_loads``), where that reads fewer bytes from memory, or as
      many and moves fewer: without, the passes may load a tile again in a second layout rather
      than convert it (upstream layer norm backward: its three row loads, for one conversion
      before a store), or lay a host out better than ``make_ttgir`` did; with, they keep
      ``make_ttgir``'s loads."""
    costs: dict[tuple[bool, bool], tuple[int, int]] = {}
    laid: dict[tuple[bool, bool], object] = {}
    copy = copier(module, context)   # printed once: only copies of it are laid out

    def cost(anchored: bool, loads_held: bool) -> tuple[int, int]:
        """(bytes read from memory, bytes moved between threads) of a copy laid out so."""
        if (anchored, loads_held) not in costs:
            trial = laid[anchored, loads_held] = copy()
            _lay_out(trial, context, target, callees, anchored, loads_held)
            costs[anchored, loads_held] = (movement.loaded_bytes(trial),
                                           movement.moving_bytes(trial, gluon_ir.GluonOpBuilder(context)))
        return costs[anchored, loads_held]

    anchored = bool(anchors.holdable(module, callees)) and cost(True, False)[1] < cost(False, False)[1]
    loads_held = target.backend == "hip" and bool(anchors.buffer_loads(module)) \
        and cost(anchored, True) < cost(anchored, False)
    return anchored, loads_held, laid.get((anchored, loads_held))


def _run(module, context, add) -> None:
    pm = ir.pass_manager(context)
    add(pm)
    diagnostics.run(pm, module, "hybrid_host_relayout")


def _hide_bodies(module, context) -> list[tuple]:
    """Every function with a body but the public kernel, its body moved into a function of the
    same type in a holder module; returns (function, (holder module, holder function)) pairs."""
    builder = ir.builder(context)
    holder = builder.create_module()
    return [(module.get_function(name), (holder, _move_body(module, name, builder, holder)))
            for name in _functions_with_bodies(module)]


def _move_body(module, name: str, builder, holder):
    """The body of ``module``'s function ``name`` moved into a function of the same type made in
    ``holder``; returns that function."""
    function = module.get_function(name)
    keeper = builder.get_or_insert_function(holder, name, builder.get_function_ty(
        list(function.type.param_types()), result_types(module, function)), "private", False)
    holder.push_back(keeper)
    stitch.splice(holder, keeper, module, function)
    return keeper


def _adopt(module, context, laid) -> None:
    """The host kernel of ``module`` given the body of its copy ``laid`` (a trial of ``_holds`` or
    ``_transpose_in_thread`` that is kept; its other functions are declarations, as the host's are
    while their bodies are hidden). The host's own body is dropped with a holder module."""
    name = module.get_entry_func_name()
    builder = ir.builder(context)
    _move_body(module, name, builder, builder.create_module())
    stitch.splice(module, module.get_function(name), laid, laid.get_function(name))


def _functions_with_bodies(module) -> list[str]:
    names = []

    def visit(op):
        if op.get_name() == "tt.func" and op.get_str_attr("sym_visibility") == "private" \
                and op.get_region(0).size():
            names.append(op.get_str_attr("sym_name"))

    module.walk(visit)
    return names


def _call_edges(module, regions: dict[str, int]) -> tuple[dict[int, str], dict[int, str]]:
    """The Gluon calls' (results, operands): value id -> its boundary's tag."""
    results: dict[int, str] = {}
    operands: dict[int, str] = {}

    def visit(op):
        index = regions.get(op.get_flat_symbol_ref_attr("callee")) if op.get_name() == "tt.call" else None
        if index is not None:
            operands.update({op.get_operand(k).id(): BoundaryTag(index, "in", k).text
                             for k in range(op.get_num_operands())})
            results.update({op.get_result(j).id(): BoundaryTag(index, "out", j).text
                            for j in range(op.get_num_results())})

    module.walk(visit)
    return results, operands


def _tag_boundaries(module, context, regions: dict[str, int]) -> None:
    """Tag each untagged conversion of a Gluon call's result (or load of a buffer it returned), or
    conversion into a call's operand, as that boundary's: the passes remake such ops (in the layout
    they chose) without the tags of the ones they replace."""
    results, operands = _call_edges(module, regions)
    builder = ir.builder(context)

    def conversions(op):
        if op.get_name() in _BOUNDARY_OPS and not op.get_str_attr(TAG):
            found = results.get(op.get_operand(0).id()) or operands.get(op.get_result(0).id())
            if found:
                op.get_result(0).set_attr(TAG, builder.get_string_attr(found))

    module.walk(conversions)


def _tags(module) -> set[str]:
    found: set[str] = set()

    def visit(op):
        if op.get_name() in _BOUNDARY_OPS and op.get_str_attr(TAG):
            found.add(op.get_str_attr(TAG))

    module.walk(visit)
    return found
