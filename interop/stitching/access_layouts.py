"""A Triton host's loads and stores issued in the layouts of the Gluon code around them.

A Gluon function may take a tensor in a layout of its own: declared (``@hybrid.takes``) or the
one its code converts the argument to first (``gl.convert_layout(x, L)``, taken as declared:
``handoff.entry_layouts``). The Triton host, laid out while the call was opaque, loads the tile
in the layout Triton's coalescing chose and the boundary converts it, through shared memory.
Triton's ``RemoveLayoutConversions`` would not move the load (a load is an anchor), so the
rematerialization it does inside a kernel is done here across the call: the load is issued again
in the region's layout (its pointers and mask made again by ``remat``) where that reads memory as
well, the call takes it as loaded, and the host's other uses of the tile take it through a
conversion. Triton's passes, run next on the host (``lowering/host_relayout``), then lay the
host's code out around the load and the region's results. A store they leave in the layout
Triton's coalescing chose, its value converted to it from the layout the host's code now computes
in, is issued in that layout as well (``issue_stores_in_value_layouts``; the old store is masked
off for the canonicalizer to delete, as the bindings delete no op). Where the layouts agree, the
host then has all-Triton's single layout: no conversion and no shared memory.

A tile the host computes by elementwise float arithmetic from such tiles (``g[:, None] - g[None, :]``
of a loaded row ``g``), converted for a call, is made again in the call's layout as well, as
Triton's own layout propagation makes it in the layout of its use: its arithmetic made again
there (``remat.Loads``), and each load it starts from issued again where it was, in the layout the
arithmetic takes it in. Only a load Triton itself would issue again so (one of fewer elements than
the CTA has threads, ``anchors.threads``: every thread reads it anyway) is.

Only loads and stores without cache, eviction or volatile hints are issued again (the bindings
cannot read those hints off an op, so a host with any is left as it is), and a store only where
it is masked by a mask nothing else live uses.
"""
from __future__ import annotations

import math
import re

from triton.experimental.gluon import language as gl

from ..boundary import TAG
from ..triton import compat
from ..triton.bindings import ir
from .anchors import HOLDS, threads
from .remat import CASTS, LOADS, Loads, Rematerializer, in_layout, tensor_type
from ..ir.uses import uses

#: A ``tt.load`` or ``tt.store`` printed with no attributes: no cache or eviction hints, not volatile
#: (a call result's stand-in load carries only its mark, ``anchors.HOLDS``, which is no hint).
_PLAIN = re.compile(r"(?:= tt\.load|tt\.store) %[\w.#]+(?:, %[\w.#]+){0,2}"
                    rf"(?: \{{{re.escape(HOLDS)} = \"\d+\"\}})? : ")


def issue_in_wanted_layouts(module, builder, tags: set[str]) -> set[str]:
    """Each boundary conversion tagged one of ``tags`` (a call's operands) of a tile the host
    loaded becomes the load issued again in the layout converted to, and one of index arithmetic
    from scalars (a pointer tile), or of float arithmetic from small loads, that arithmetic made in
    it. Returns the tags so removed."""
    _, conversions = uses(module, lambda op: op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG) in tags)
    if not conversions or not _rewritable(module):   # (the cheap walk first: ``_rewritable`` prints the module)
        return set()
    remat = _rematerializer(module, builder)
    issued: set[str] = set()
    for conversion in conversions:
        source = conversion.get_operand(0)
        load, casts = _loaded(source, remat)
        if load is not None:
            if _issue(load, casts, conversion, remat, builder):
                issued.add(conversion.get_str_attr(TAG))
        elif remat.defining(source) is not None and remat.possible(source):
            remat.replace(conversion)
            issued.add(conversion.get_str_attr(TAG))
    return issued


def _loaded(value, remat: Rematerializer) -> tuple:
    """The load (``tt.load``, AMD buffer load) that made ``value``, directly or through casts
    (``remat.CASTS``: a row loaded in fp16 and widened), and those casts from the load on; (None,
    []) for any other."""
    casts, op = [], remat.defining(value)
    while op is not None and op.get_name() in CASTS:
        casts.insert(0, op)
        op = remat.defining(op.get_operand(0))
    return (op, casts) if op is not None and op.get_name() in LOADS else (None, [])


def issue_stores_in_value_layouts(module, builder) -> int:
    """Each masked ``tt.store`` of a value converted to the store's layout is issued in the
    layout converted from, where that writes memory as well; the old store's mask (used by
    nothing else live) becomes all false, for the canonicalizer to delete it. Returns how many
    stores were issued again."""
    users, stores = uses(module, lambda op: op.get_name() == "tt.store" and op.get_num_operands() == 3)
    remat = Rematerializer(module, builder)
    converted = [(store, remat.defining(store.get_operand(1))) for store in stores]
    converted = [(store, conversion) for store, conversion in converted
                 if conversion is not None and conversion.get_name() == "ttg.convert_layout"]
    if not converted or not _rewritable(module):   # (the cheap walk first: ``_rewritable`` prints the module)
        return 0
    issued = 0
    for store, conversion in converted:
        pointers, value, mask = (store.get_operand(i) for i in range(3))
        if not _only_store_of(mask, users):
            continue
        source = conversion.get_operand(0)
        wanted = builder.get_gluon_layout_from_tensor(source)
        if not _accesses_as_well(builder.get_gluon_layout_from_tensor(value), wanted, _shape(value)) \
                or not remat.possible(pointers) or not remat.possible(mask):
            continue
        builder.set_insertion_point_after(store)
        compat.create_plain_store(builder, remat.make(pointers, wanted), source, remat.make(mask, wanted))
        mask.replace_all_uses_with(builder.create_splat(mask.get_type(), builder.get_int1(False)))
        issued += 1
    return issued


def _only_store_of(mask, users: dict) -> bool:
    """Whether one store uses ``mask`` and every other user has results none of which is used
    (an op left dead by an earlier rewrite, no effect the program keeps)."""
    others = [op for op in users.get(mask.id(), []) if op.get_name() != "tt.store"]
    return len(users.get(mask.id(), [])) - len(others) == 1 and all(
        op.get_num_results() > 0 and not any(users.get(op.get_result(i).id()) for i in range(op.get_num_results()))
        for op in others)


def issuable(module, builder, tiles: list[tuple]) -> list[bool]:
    """For each ``(value, layout)`` of ``tiles`` (a tile of ``module`` and a Gluon layout), whether
    ``issue_in_wanted_layouts`` would make it in that layout: a load that loads as well there, or
    index arithmetic from scalars. That is what makes taking a Gluon function's entry conversion
    as its declared layout pay (``handoff.entry_layouts``). One walk of the module answers them all."""
    if not tiles or not _rewritable(module):
        return [False] * len(tiles)
    remat = _rematerializer(module, builder)
    loads = [_loaded(value, remat)[0] for value, _ in tiles]
    return [_loads_as_well(load, layout, remat, builder) if load is not None
            else remat.defining(value) is not None and remat.possible(value)
            for load, (value, layout) in zip(loads, tiles)]


def _rematerializer(module, builder) -> Rematerializer:
    """A ``Rematerializer`` that also makes float arithmetic again from loads of fewer elements
    than the CTA's threads, each issued again right after itself (where it reads what it read)."""
    remat: Rematerializer

    def issuable(load) -> bool:
        result, parts = load.get_result(0), load_operands(load)
        if parts is None or math.prod(_shape(result)) >= threads(module):
            return False
        address, mask, other = parts
        return (remat.possible(address[1] if isinstance(address, tuple) else address)
                and (mask is None or remat.possible(mask)) and (other is None or _constant(remat.defining(other))))

    def issue(load, layout, made):
        here = builder.get_insertion_point()
        builder.set_insertion_point_after(load)
        loaded = _plain_load(load, layout, made, builder)
        builder.restore_insertion_point(here)
        return loaded

    remat = Rematerializer(module, builder, loads=Loads(issuable, issue))
    return remat


def _loads_as_well(load, wanted, remat: Rematerializer, builder) -> bool:
    """Whether ``load`` can be made again in ``wanted`` (its pointers, or a buffer load's offsets,
    and its mask index arithmetic, its other value a constant) and reads memory as well there."""
    result, parts = load.get_result(0), load_operands(load)
    if parts is None:
        return False
    address, mask, other = parts
    return (_accesses_as_well(builder.get_gluon_layout_from_tensor(result), wanted, _shape(result))
            and remat.possible(address[1] if isinstance(address, tuple) else address)
            and (mask is None or remat.possible(mask)) and (other is None or _constant(remat.defining(other))))


#: One-operand ops a result is followed back through to its load: they take their operand's layout.
_PASSED = ("ttg.convert_layout", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
           "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "tt.fp_to_fp", "tt.bitcast")


def issue_result_in(module, builder, value, layout) -> bool:
    """The tile ``value`` (a region's result) that a plain load of ``module`` produced, directly
    or through conversions and casts, loaded again in ``layout`` where that reads memory as well; the old
    load's uses take the new one converted back, for Triton's layout pass to fold (a region's
    result sink follows its operand's layout). Whether it was."""
    if not _rewritable(module):
        return False
    remat = Rematerializer(module, builder)
    load = remat.defining(value)
    while load is not None and load.get_name() in _PASSED:
        load = remat.defining(load.get_operand(0))
    if load is None or load.get_name() != "tt.load" or not _loads_as_well(load, layout, remat, builder):
        return False
    _load_again(load, layout, remat, builder)
    return True


def _issue(load, casts: list, conversion, remat: Rematerializer, builder) -> bool:
    """``load`` made again in the layout ``conversion`` converts it (or its ``casts`` of it) to:
    the conversion's uses take the new load (cast the same way there), the old load's other uses
    take it converted back."""
    wanted = builder.get_gluon_layout_from_tensor(conversion.get_result(0))
    if not _loads_as_well(load, wanted, remat, builder):
        return False
    current = _load_again(load, wanted, remat, builder)
    for cast in casts:
        result = cast.get_result(0)
        current = getattr(builder, CASTS[cast.get_name()])(current, in_layout(result, wanted, builder))
        current.set_loc(result.get_loc())
    conversion.get_result(0).replace_all_uses_with(current)
    return True


def _load_again(load, wanted, remat: Rematerializer, builder):
    """A plain load of what ``load`` reads, made in ``wanted`` right after it; ``load``'s uses take
    it converted back to their layout. Returns the new load's result."""
    result = load.get_result(0)
    builder.set_insertion_point_after(load)
    loaded = _plain_load(load, wanted, remat.make, builder)
    back = builder.create_convert_layout(result.get_type(), loaded)
    back.set_loc(result.get_loc())
    result.replace_all_uses_with(back)
    return loaded


def _plain_load(load, wanted, made, builder):
    """A plain load of what ``load`` reads, in ``wanted``, at the builder's insertion point: its
    pointers (an AMD buffer load's offsets) and mask made again by ``made(value, layout)``."""
    result = load.get_result(0)
    address, mask, other = load_operands(load)
    buffered = isinstance(address, tuple)   # an AMD buffer load: its scalar base as it is, its offsets made again
    indices = made(address[1] if buffered else address, wanted)
    mask = made(mask, wanted) if mask is not None else None
    if other is not None:   # a constant: the canonicalizer folds its conversion into it
        other = builder.create_convert_layout(in_layout(other, wanted, builder), other)
    if buffered:
        loaded = builder.create_buffer_load(in_layout(result, wanted, builder), address[0], indices,
                                            ir.value() if mask is None else mask,
                                            ir.value() if other is None else other, ir.CACHE_MODIFIER.NONE)
    else:
        loaded = compat.create_plain_load(builder, indices, mask, other)
    loaded.set_loc(result.get_loc())
    return loaded


def _accesses_as_well(loaded, wanted, shape: list[int]) -> bool:
    """Whether a load in ``wanted`` reads memory as well as one in ``loaded`` (the layout Triton's
    coalescing chose): both blocked with the same fastest dimension, at least as many contiguous
    elements per thread, and a warp's contiguous run at least as long (or the whole dimension)."""
    if not (isinstance(loaded, gl.BlockedLayout) and isinstance(wanted, gl.BlockedLayout)):
        return False
    fastest = loaded.order[0]
    if wanted.order[0] != fastest:
        return False
    run = loaded.size_per_thread[fastest] * loaded.threads_per_warp[fastest]
    return (wanted.size_per_thread[fastest] >= loaded.size_per_thread[fastest]
            and wanted.size_per_thread[fastest] * wanted.threads_per_warp[fastest] >= min(run, shape[fastest]))


def _shape(value) -> list[int]:
    return tensor_type(str(value.get_type()))[0]


def load_operands(load) -> tuple | None:
    """A load's (address, mask or None, other or None): a ``tt.load``'s pointer tile, an AMD
    buffer load's (scalar base, offsets); None for a buffer load with a stride operand."""
    operands = [load.get_operand(i) for i in range(load.get_num_operands())]
    if load.get_name() == "tt.load":
        return tuple((operands + [None, None])[:3])
    base, offsets, *rest = operands
    if any(not str(v.get_type()).startswith("tensor<") for v in rest):   # (a stride: a scalar)
        return None
    # mask and other are both optional: the other value is the one of the result's type
    other = rest.pop() if rest and str(rest[-1].get_type()) == str(load.get_result(0).get_type()) else None
    return (base, offsets), (rest[0] if rest else None), other


def _constant(op) -> bool:
    return op is not None and op.get_name() == "arith.constant"


def _rewritable(module) -> bool:
    """Whether loads and stores of ``module`` may be issued again: no ``tt.load``, ``tt.store``
    or AMD buffer load of the module carries a hint (an attribute) an op made again would lose."""
    lines = module.str_nodebug().splitlines()
    return all(_PLAIN.search(line) for line in lines if " = tt.load " in line or " tt.store " in line) \
        and not any("{" in line.split(" : ")[0] for line in lines if " = amdg.buffer_load " in line)
