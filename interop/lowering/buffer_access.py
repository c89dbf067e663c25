"""``hybrid.amd.buffer_load`` / ``hybrid.amd.buffer_store``: a Gluon access of a pointer tile that
the kernel issues as an AMD buffer op wherever Triton's own ``ConvertToBufferOps`` would.

On gfx942/gfx950 Triton turns a load or store whose pointer tile is a scalar base plus 32-bit
offsets it proves non-negative into a buffer op (``amdg.buffer_load %base[%offsets]``). A Triton
function taking that tile as a parameter has it as a buffer op in the kernel that inlines it, but
its Gluon port cannot: the base and offsets are the caller's, and Gluon issues a global access as
written (Gluon's own ``buffer_load`` takes them, not a tile). These builtins mark the access;
once the kernel is stitched and the tile is the caller's arithmetic again (``resolve``), Triton's
pass is run on a copy of the kernel as the judge, and each marked access it converted there is
issued as that buffer op, from the same base and offsets; any other stays the global access. So
an access is a buffer op exactly where Triton proves it safe, never on a guess. Outside a build
by ``hybrid`` (upstream's compiler, the interpreter) they are ``gl.load`` / ``gl.store``.

A marked load carries ``MARK`` (and is made again without it: the bindings remove no
attribute); a marked store sits alone in an ``scf.if`` on an opaque flag
(``FLAG``), so that it can be dropped (the bindings erase no op: its block is swapped for an
empty one) where the buffer store replaces it, and kept (the flag becomes true) where not.
"""
from __future__ import annotations

from ..ir import diagnostics
from ..ir.canonicalize import canonicalize
from ..ir.copy import copy_module
from ..stitching import opaque, stitch
from ..stitching.access_layouts import load_operands
from ..triton import compat
from ..triton.bindings import gluon_ir, ir
from ..triton.language import core as tl
from . import interception
from .amd_hints import refuse_off_amd
from ..stitching.state import Stitch

#: The attribute of a marked ``tt.load`` (its value: the load's key while ``resolve`` runs).
MARK = "hybrid.buffer"
#: The opaque flag a marked store's ``scf.if`` is on.
FLAG = "hybrid.buffer_store"


@tl.builtin
def buffer_load(pointer, mask=None, other=None, _semantic=None, _generator=None):
    """``gl.load(pointer, mask, other)``, issued as an AMD buffer load where the kernel's
    ``pointer`` is a scalar base plus offsets Triton proves in range (see the module)."""
    from triton.experimental.gluon import language as gl
    refuse_off_amd(buffer_load, _semantic.builder, _generator)
    loaded = gl.load(pointer, mask=mask, other=other, _semantic=_semantic)
    if _marking(_semantic, _generator):
        loaded.handle.set_attr(MARK, _semantic.builder.get_string_attr(""))
    return loaded


@tl.builtin
def buffer_store(pointer, value, mask=None, _semantic=None, _generator=None):
    """``gl.store(pointer, value, mask)``, issued as an AMD buffer store where the kernel's
    ``pointer`` is a scalar base plus offsets Triton proves in range (see the module)."""
    from triton.experimental.gluon import language as gl
    refuse_off_amd(buffer_store, _semantic.builder, _generator)
    if not _marking(_semantic, _generator):
        return gl.store(pointer, value, mask=mask, _semantic=_semantic)
    builder = _semantic.builder
    guard = builder.create_if_op([], opaque.enable_flag(builder, FLAG), False)
    after = builder.get_insertion_point()
    builder.set_insertion_point_to_start(guard.get_then_block())
    gl.store(pointer, value, mask=mask, _semantic=_semantic)
    builder.restore_insertion_point(after)


buffer_load.hybrid_name = "hybrid.amd.buffer_load"
buffer_store.hybrid_name = "hybrid.amd.buffer_store"


def _marking(semantic, generator) -> bool:
    return interception.compile_of(generator) is not None and isinstance(semantic.builder, gluon_ir.GluonOpBuilder)


def resolve(state: Stitch, module) -> bool | None:
    """Issue each marked access of the stitched ``module`` as the buffer op Triton's
    ``ConvertToBufferOps`` makes of it on a copy (on AMD, with Triton's buffer ops on), the rest
    as the global accesses they are; no marker is left. One pass: the accesses are issued, then
    the flags that guarded the stores set and the canonicalizer folds their branches. False
    where no access is marked (nothing to do)."""
    if not _Marked(module).any():
        return False
    context, target = state.context, state.target
    stitch.inline(module, context)   # (a Gluon kernel's functions: their tiles are the caller's then)
    found = _Marked(module)
    builder = gluon_ir.GluonOpBuilder(context)
    loads, stores = _converted_on_a_copy(module, context, target, found, builder) \
        if target.backend == "hip" and compat.buffer_ops_enabled() else (set(), set())
    for k, load in enumerate(found.loads):   # each made again, unmarked; the marked one is left dead
        result = load.get_result(0)
        pointers, mask, other = load_operands(load)
        builder.set_insertion_point_after(load)
        if k in loads:
            base, offsets = found.split(load)
            issued = builder.create_buffer_load(result.get_type(), base, offsets, mask or ir.value(),
                                                other or ir.value(), ir.CACHE_MODIFIER.NONE)
        else:
            issued = compat.create_plain_load(builder, pointers, mask, other)
        issued.set_loc(result.get_loc())
        result.replace_all_uses_with(issued)
    for k, (guard, store) in enumerate(found.stores):
        if k in stores:
            base, offsets = found.split(store)
            builder.set_insertion_point_after(guard)
            builder.set_loc(guard.get_operand(0).get_loc())   # the flag's: the call's location
            builder.create_buffer_store(store.get_operand(1), base, offsets,
                                        store.get_operand(2) if store.get_num_operands() > 2 else ir.value(),
                                        ir.CACHE_MODIFIER.NONE)
            block = store.get_block()
            empty = builder.create_block_with_parent(block.get_parent(), [])
            builder.set_insertion_point_to_start(empty)
            builder.create_yield_op([])
            block.erase()
    stitch.set_flags(module, FLAG, True, context)
    canonicalize(module, context)


class _Marked:
    """The marked loads and stores of a module, in the order a walk meets them (the same in a
    copy parsed from its text), and what defines each value."""

    def __init__(self, module):
        self.loads: list = []
        self.stores: list[tuple] = []   # (the scf.if on its flag, the tt.store in it)
        self.defining: dict[int, object] = {}
        guarded: dict[int, object] = {}   # then-region id -> the marked store in it (a walk meets it first)

        def visit(op):
            for i in range(op.get_num_results()):
                self.defining[op.get_result(i).id()] = op
            name = op.get_name()
            if name == "tt.load" and op.get_str_attr(MARK) is not None:
                self.loads.append(op)
            elif name in ("tt.store", "amdg.buffer_store"):
                guarded[op.get_block().get_parent().id()] = op
            elif name == "scf.if" and self.is_flag(op.get_operand(0)):
                self.stores.append((op, guarded.get(op.get_region(0).id())))

        module.walk(visit)

    def any(self) -> bool:
        return bool(self.loads or self.stores)

    def is_flag(self, value) -> bool:
        op = self.defining.get(value.id())
        return op is not None and op.get_name() == "tt.elementwise_inline_asm" and opaque.marker_of(op) == FLAG

    def split(self, access) -> tuple | None:
        """The scalar base and the offsets of ``access``'s pointer tile, ``addptr(splat(base),
        offsets)``, as ``ConvertToBufferOps`` takes them; None where it is not that, or where a
        marked store's operands are made inside its ``scf.if`` (a broadcast of its value)."""
        addptr = self.defining.get(access.get_operand(0).id())
        splat = self.defining.get(addptr.get_operand(0).id()) if addptr and addptr.get_name() == "tt.addptr" else None
        if splat is None or splat.get_name() != "tt.splat":
            return None
        if access.get_name() == "tt.store" and any(
                self.defining.get(access.get_operand(i).id()) is not None
                and self.defining[access.get_operand(i).id()].get_block().id() == access.get_block().id()
                for i in range(access.get_num_operands())):
            return None
        return splat.get_operand(0), addptr.get_operand(1)


def _converted_on_a_copy(module, context, target, found: _Marked, builder) -> tuple[set[int], set[int]]:
    """The keys of the marked loads and of the marked stores that Triton's ``ConvertToBufferOps``
    turns into buffer ops, run on a copy of ``module`` (its range analysis sees the whole kernel)."""
    for k, load in enumerate(found.loads):
        load.get_result(0).set_attr(MARK, builder.get_string_attr(str(k)))
    trial = copy_module(module, context)
    pm = ir.pass_manager(context)
    compat.add_buffer_ops(pm, target)
    try:
        diagnostics.run(pm, trial, "hybrid_buffer_ops")
    except RuntimeError:   # no judgement: every access stays as written
        return set(), set()
    judged = _Marked(trial)
    left = {int(load.get_str_attr(MARK)) for load in judged.loads}
    loads = {k for k, load in enumerate(found.loads) if k not in left and found.split(load) is not None}
    stores = {k for k, ((_, store), (_, judged_store)) in enumerate(zip(found.stores, judged.stores))
              if store is not None and judged_store is not None and judged_store.get_name() == "amdg.buffer_store"
              and found.split(store) is not None}
    return loads, stores
