"""Boundary conversions moved past the casts that follow them on Triton's side of a boundary.

A Gluon region's result enters the Triton host in the layout its author's code produced, and
the host's Triton code had already been laid out (by Triton's passes, before the region was
built) around a result of unknown layout: an epilogue such as ``acc.to(tl.float16)`` then a store
converts twice, the boundary's conversion on fp32 and the host's own (to the store's layout) on
fp16, where the all-Triton kernel converts once, after the cast. Triton's code has no author's
layouts to keep, so the boundary's conversion is moved down a chain of single-use casts: into
the host's own conversion where the chain ends in one (one conversion where there were two, the
all-Triton kernel's), or after a narrowing cast (fewer bytes to move), just before its first use
there (a store's value, after its pointers and mask), where Triton's passes put the all-Triton
kernel's conversion: upstream matmul's K loop ported for sm90a builds to the kernel's 3373
instructions so, 3382 with the conversion right after the cast. The same holds for a Triton
region's inputs in a Gluon host. Conversions into Gluon code are never moved: its layouts are the
author's. (A Triton host then lays itself out again around the result with Triton's own passes,
``lowering/host_relayout``: on AMD its store takes the MFMA tile as all-Triton's does.)
"""
from __future__ import annotations

from ..boundary import TAG, Moved
from .remat import CASTS, FLOAT_BINARY, FLOAT_UNARY, in_layout
from ..ir.uses import producers, uses

_NARROWING = {"arith.truncf"}
#: The host's elementwise float arithmetic a result's conversion moves past (``join_past_arithmetic``).
_ARITHMETIC = {**FLOAT_BINARY, **FLOAT_UNARY, "arith.maxnumf": "create_maxnumf", "arith.minnumf": "create_minnumf",
               "math.log2": "create_log2", "math.log": "create_log", "math.sqrt": "create_sqrt",
               "math.rsqrt": "create_rsqrt", "math.absf": "create_fabs"}
#: What an operand beside a converted result may be: made again in the result's layout for free.
_SPLATS = {"tt.splat", "arith.constant"}


def sink_past_casts(module, builder, tags: set[str]) -> dict[str, Moved]:
    """Move each boundary conversion tagged one of ``tags`` past the casts that use it (see the
    module's docstring). Returns, per tag moved, ``Moved.MERGED`` (it became the host's own
    conversion) or ``Moved.NARROWED`` (it now converts after a narrowing cast)."""
    users, conversions = uses(module, lambda op: op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG) in tags)
    moved: dict[str, Moved] = {}
    for conversion in conversions:
        chain, value = [], conversion.get_result(0)
        while len(users.get(value.id(), [])) == 1 and users[value.id()][0].get_name() in CASTS:
            chain.append(users[value.id()][0])
            value = chain[-1].get_result(0)
        following = users.get(value.id(), [])
        own = following[0] if len(following) == 1 and following[0].get_name() == "ttg.convert_layout" \
            and not following[0].get_str_attr(TAG) else None
        if not chain or (own is None and not any(op.get_name() in _NARROWING for op in chain)):
            continue
        source = conversion.get_operand(0)
        layout = builder.get_gluon_layout_from_tensor(source)
        builder.set_insertion_point_after(own or chain[-1])
        current = source
        for op in chain:
            result = op.get_result(0)
            current = getattr(builder, CASTS[op.get_name()])(current, in_layout(result, layout, builder))
            current.set_loc(result.get_loc())
        if own is None:   # where Triton converts: just before the first use (a store's value, after its pointers and mask)
            _before_first_use(module, builder, value, chain[-1].get_block().id())
        boundary_tag = conversion.get_str_attr(TAG)
        replaced = own.get_result(0) if own is not None else value
        converted = builder.create_convert_layout(replaced.get_type(), current)
        converted.set_loc(replaced.get_loc())
        if own is None:   # still the boundary's conversion, on fewer bytes
            converted.set_attr(TAG, builder.get_string_attr(boundary_tag))
        replaced.replace_all_uses_with(converted)
        moved[boundary_tag] = Moved.NARROWED if own is None else Moved.MERGED
    return moved


def _before_first_use(module, builder, value, block: int) -> None:
    """The insertion point just before the first op that uses ``value``, where that op is in
    ``block``; else the builder's own, left as it is."""
    first: list[tuple[int, object]] = []    # (the first user's block, the op before it there)
    last: dict[int, object] = {}

    def visit(op) -> None:   # post-order: an earlier sibling before a later one
        here = op.get_block()
        if here is None:
            return
        if not first and any(op.get_operand(i).id() == value.id() for i in range(op.get_num_operands())):
            first.append((here.id(), last.get(here.id())))
        last[here.id()] = op

    module.walk(visit)
    if first and first[0][0] == block and first[0][1] is not None:
        builder.set_insertion_point_after(first[0][1])


def join_past_arithmetic(module, builder, tags: set[str]) -> dict[str, Moved]:
    """Boundary conversions (tagged one of ``tags``) from one layout to another, moved past the
    host's elementwise float arithmetic on their values wherever that leaves fewer conversions.

    The all-Triton kernel computes ``m_i + log2(l_i)`` on a loop's two row statistics in the
    loop's layout and converts the sum once for its store: Triton's layout propagation runs forward
    from the loop's dot through that arithmetic. A region's results are no anchor for that
    propagation (a row of fewer elements than the kernel has threads is none for Triton either),
    so the host converted each result first. Here the arithmetic whose tensor operands are all such
    conversions (or splats, made again) runs in the results' layout instead; each of its values
    used elsewhere is converted once, just before that use. Returns ``Moved.JOINED`` per tag moved."""
    users, conversions = uses(module, lambda op: op.get_name() == "ttg.convert_layout" and op.get_str_attr(TAG) in tags)
    groups: dict[tuple, list] = {}
    for conversion in conversions:
        key = (str(conversion.get_operand(0).get_type()).split(",", 1)[-1],
               str(conversion.get_result(0).get_type()).split(",", 1)[-1], conversion.get_block().id())
        groups.setdefault(key, []).append(conversion)
    moved: dict[str, Moved] = {}
    defining = producers(module) if any(len(group) > 1 for group in groups.values()) else {}
    for group in groups.values():
        if len(group) > 1:
            moved.update(_join(module, builder, group, users, defining))
    return moved


def _join(module, builder, group: list, users: dict, defining: dict) -> dict[str, Moved]:
    """``join_past_arithmetic`` for one group of conversions (one block, one pair of layouts)."""
    member = {c.get_result(0).id(): c.get_operand(0) for c in group}   # value id -> its value in the source layout
    arithmetic, block = [], group[0].get_block().id()

    def takes(op) -> bool:
        name = op.get_name()
        if op.get_block() is None or op.get_block().id() != block or not hasattr(builder, _ARITHMETIC.get(name, "")):
            return False
        operands = [op.get_operand(i) for i in range(op.get_num_operands())]
        return any(o.id() in member for o in operands) and all(
            o.id() in member or (defining.get(o.id()) is not None and defining[o.id()].get_name() in _SPLATS)
            for o in operands)

    def visit(op):   # program order: an op's operands are settled before it
        if takes(op):
            arithmetic.append(op)
            member[op.get_result(0).id()] = None   # made below

    module.walk(visit)
    inside = {op.get_result(0).id() for op in arithmetic}

    def outside(value) -> int:   # how many ops not among the arithmetic moved use ``value``
        return sum(not u.get_num_results() or u.get_result(0).id() not in inside for u in users.get(value.id(), []))

    converted = [c for c in group if len(users.get(c.get_result(0).id(), [])) > outside(c.get_result(0))]
    escaping = [op for op in arithmetic if outside(op.get_result(0))]
    kept = [c for c in converted if outside(c.get_result(0))]
    if not converted or len(escaping) + len(kept) >= len(converted):
        return {}
    layout = builder.get_gluon_layout_from_tensor(group[0].get_operand(0))
    for op in arithmetic:
        builder.set_insertion_point_after(op)
        result = op.get_result(0)
        operands = [_in_source(op.get_operand(i), member, defining, layout, builder) for i in range(op.get_num_operands())]
        made = getattr(builder, _ARITHMETIC[op.get_name()])(*operands)
        made.set_loc(result.get_loc())
        member[result.id()] = made
    freed = [c.get_str_attr(TAG) for c in converted if c not in kept]
    for n, op in enumerate(escaping):
        result = op.get_result(0)
        builder.set_insertion_point_after(op)
        _before_first_use(module, builder, result, block)
        conversion = builder.create_convert_layout(result.get_type(), member[result.id()])
        conversion.set_loc(result.get_loc())
        conversion.set_attr(TAG, builder.get_string_attr(freed[min(n, len(freed) - 1)]))
        result.replace_all_uses_with(conversion)
    return {c.get_str_attr(TAG): Moved.JOINED for c in converted}


def _in_source(value, member: dict, defining: dict, layout, builder):
    """``value`` (a member, or a splat beside one) in the source layout ``layout``."""
    if member.get(value.id()) is not None:
        return member[value.id()]
    splat = defining[value.id()]
    if splat.get_name() == "tt.splat":
        return builder.create_splat(in_layout(value, layout, builder), splat.get_operand(0))
    return builder.create_convert_layout(in_layout(value, layout, builder), value)   # a constant: the canonicalizer folds it
