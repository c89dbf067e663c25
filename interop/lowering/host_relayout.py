"""A Triton host laid out again around its Gluon calls, once their result layouts are known.

Triton's ``ttgir`` stage chose the host's layouts while each Gluon call was opaque
(``triton_host``), so the code after a call takes the region's result in a layout picked without
it: on AMD a blocked layout the result is converted to before its store, where all-Triton
stores straight from the MFMA layout (``optimize_epilogue`` ran while the result was opaque).

Once the calls are spliced, each call's results are typed by its callee's signature, and a
``tt.call`` is an op Triton's layout passes cannot re-lay out; but a call's result is no anchor
for them (loads, stores, dots and function arguments are), so while they run each tile a call
returns (in a loop too) is held by a stand-in load (``anchors``): the host's code follows it as
all-Triton's follows its own tile load. ``relayout`` moves the body of every function but the host kernel into a holder
module, so that the passes see the host alone and nothing of a Gluon region (whose ops keep
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

import functools

from . import arch
from .. import diagnostics
from ..boundaries import movement
from ..boundary import TAG, tag
from ..instrumentation import timing
from ..stitching import access_layouts, anchors, sinking, stitch
from ..stitching.uses import uses
from ..triton import compat
from ..triton.bindings import gluon_ir, ir, parse_module, passes

#: The ops a boundary leaves in the host for a Gluon call that Triton's layout passes may remake.
_BOUNDARY_OPS = ("ttg.convert_layout", "ttg.local_load")
_IN_THREAD_TRANSPOSE = "amdg.in_thread_transpose"


@timing.timed("host relayout")
def relayout(module, context, target, regions: dict[str, int]) -> stitch.Folded:
    """Lay the host kernel of ``module`` out again around its calls. ``regions``: the symbol of
    each Gluon function called -> its region's index. Returns what became of the boundaries'
    conversions: moved past the host's casts before Triton's passes run (``sinking``), so that
    they see the host as all-Triton's (a cast in the region's layout, then the host's own
    conversion); removed by them (``"adopted"``: the host takes the region's layout); a tile the
    host loaded, loaded again in the layout the region takes (``"reloaded"``,
    ``access_layouts``); or, a
    result stored into shared memory as it came, the host's loads of that buffer moved up to the
    store (``stitch.load_stored_values_early``). A host without Gluon calls (all in untaken
    branches) is left as Triton made it."""
    if not regions:
        return stitch.Folded.nothing()
    before = _tags(module)
    held = _hide_bodies(module, context)
    try:
        _run(module, context, passes.common.add_canonicalizer)   # folds the boundary's scf.if, drops the markers
        builder = gluon_ir.GluonOpBuilder(context)
        results, operands = _call_edges(module, regions)
        moved = sinking.sink_past_casts(module, builder, set(results.values()))
        issued = access_layouts.issue_in_wanted_layouts(module, builder, set(operands.values()))
        anchored, loads_held, laid = _holds(module, context, target, set(regions))
        if laid is None:
            _lay_out(module, context, target, set(regions), anchored, loads_held)
        else:   # a copy laid out so already: the same passes on the same IR are not run again
            _adopt(module, context, laid)
        _transpose_in_thread(module, context, target, set(regions))
        _tag_boundaries(module, context, regions)
        stored = stitch.load_stored_values_early(module, builder, _call_edges(module, regions)[0])
    finally:
        for function, holder in held:
            stitch.splice(module, function, *holder)
    stitch.verify(module, "laying the host out again around its Gluon calls")
    gone = {t: "reloaded" if t in issued else "adopted"
            for t in before - _tags(module) - stored if moved.get(t) != "merged"}   # or narrowed, then removed
    return stitch.Folded(loaded=frozenset(), stored=frozenset(stored), constants=frozenset(), recomputed=frozenset(),
                         moved={**moved, **gone})


@timing.timed("host relayout")
def interleave_tmem(module, context, target) -> None:
    """The stitched Triton host's tensor-memory loads sunk to their uses, as Triton's own
    ``make_ttgir`` sinks the all-Triton kernel's: it ran on the host while its Gluon calls were
    opaque, so a region's last ``tmem.load`` (a ported MMA loop's accumulator) stayed ahead of the
    host's address arithmetic for the store, holding 128 registers a thread across it (upstream
    matmul's K loop, ported, on sm100a: 5214 SASS instructions against 4765)."""
    if target in arch.SM100:   # (the targets with tensor memory)
        _run(module, context, compat.add_tmem_interleave)


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


def _transpose_in_thread(module, context, target, callees: set[str]) -> None:
    """AMD's in-thread transpose of the tiles the host stores to shared memory for a dot, for the
    calls' results. ``make_ttgir`` runs it (on gfx942) while the calls are opaque, and its pattern
    is a global load stored for a dot operand: a ported tile load the host stages was stored
    element by element, unswizzled, where all-Triton transposes the tile in registers and stores
    vectors along K into a rotating swizzle. Run with each result held by a stand-in load, on a
    copy first: kept only where it leaves every stand-in in its result's layout (a port written
    from the kernel's IR has the layout the pass gives the load; another would need a conversion);
    kept, the copy becomes the host's body (``_adopt``), the pass not run again."""
    if not compat.in_thread_transpose_enabled(target) or not anchors.holdable(module, callees):
        return
    trial = parse_module(str(module), context)
    if _transposed_in_thread(trial, context, callees):
        _adopt(module, context, trial)


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
    printed = functools.cache(lambda: str(module))   # printed once: only copies of it are laid out

    def cost(anchored: bool, loads_held: bool) -> tuple[int, int]:
        """(bytes read from memory, bytes moved between threads) of a copy laid out so."""
        if (anchored, loads_held) not in costs:
            trial = laid[anchored, loads_held] = parse_module(printed(), context)
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
        list(function.type.param_types()), stitch.result_types(module, function)), "private", False)
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
            operands.update({op.get_operand(k).id(): tag(index, "in", k) for k in range(op.get_num_operands())})
            results.update({op.get_result(j).id(): tag(index, "out", j) for j in range(op.get_num_results())})

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
