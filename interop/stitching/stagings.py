"""One staging of a value into shared memory where the stitched kernel makes it twice.

A function a kernel calls at two sites on the same operand (attention's causal ``kv_loop``: its
unmasked blocks, then the diagonal, both on ``q``) stages that operand for its dot at each. The
all-Triton kernel's stagings are immutable ``local_alloc``s of one value, which Triton's CSE
makes one; Gluon's ``allocate_shared_memory`` is always mutable, so the two stagings of a port
stayed two: ``q`` through shared memory twice (16 KB more on sm100a, stored twice on gfx950).
Where neither buffer is written after its staging, both hold the same data (a buffer's data does
not depend on the registers it came from: each port's entry conversion of ``q`` is looked
through): the later one's readers read the first, and the later one is left dead for the
canonicalizer. So are its loads: a load of the buffer in the layout an earlier load in the same
block already made is that load (gfx950's ``q`` read once into registers for both loops, as the
all-Triton kernel reads it, so that its buffer is free again before the first loop).
"""
from __future__ import annotations

from ..ir.uses import producers, uses

#: Ops that read a buffer at these operand positions and write nothing through it.
_READS = {"ttg.local_load": {0}, "ttng.tc_gen5_mma": {0, 1}, "ttng.warp_group_dot": {0, 1}}
#: Ops that only wait on or keep a buffer alive (any operand).
_KEEPS = {"ttng.wait_barrier", "ttng.warp_group_dot_wait"}


def merge_stagings(module) -> int:
    """Each ``local_alloc`` of a value that an earlier one in the same block already staged, in
    the same type, with neither buffer written after: its uses take the earlier buffer, and the
    loads of the earlier one are merged (``_merge_loads``). Returns how many allocs were merged."""
    users, allocs = uses(module, lambda op: op.get_name() == "ttg.local_alloc" and op.get_num_operands() == 1)
    if len(allocs) < 2:
        return 0
    defining = producers(module)
    first: dict[tuple, object] = {}
    kept: set[int] = set()   # the buffers that took another's readers
    merged = 0
    for alloc in allocs:   # program order: the first of a block before the later ones
        buffer = alloc.get_result(0)
        if not _only_read(buffer, users):
            continue
        key = (_unconverted(alloc.get_operand(0), defining).id(), str(buffer.get_type()), alloc.get_block().id())
        if key in first:
            buffer.replace_all_uses_with(first[key].get_result(0))
            kept.add(first[key].get_result(0).id())
            merged += 1
        else:
            first[key] = alloc
    if kept:
        _merge_loads(module, kept)
    return merged


def _merge_loads(module, buffers: set[int]) -> None:
    """Each ``local_load`` of one of ``buffers`` that an earlier load of it in the same block
    made in the same layout: its uses take the earlier load."""
    _, loads = uses(module, lambda op: op.get_name() == "ttg.local_load" and op.get_operand(0).id() in buffers)
    first: dict[tuple, object] = {}
    for load in loads:
        key = (load.get_operand(0).id(), str(load.get_result(0).get_type()), load.get_block().id())
        if key in first:
            load.get_result(0).replace_all_uses_with(first[key].get_result(0))
        else:
            first[key] = load


def _unconverted(value, defining: dict):
    """``value`` before the layout conversions that made it."""
    while (op := defining.get(value.id())) is not None and op.get_name() == "ttg.convert_layout":
        value = op.get_operand(0)
    return value


def _only_read(buffer, users: dict) -> bool:
    """Whether every use of ``buffer`` reads it (or waits on it), none writes to it."""
    for op in users.get(buffer.id(), []):
        name = op.get_name()
        if name in _KEEPS:
            continue
        positions = {k for k in range(op.get_num_operands()) if op.get_operand(k).id() == buffer.id()}
        if name not in _READS or not positions <= _READS[name]:
            return False
    return True
