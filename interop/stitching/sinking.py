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
from .remat import CASTS, in_layout
from ..ir.uses import uses

_NARROWING = {"arith.truncf"}


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
