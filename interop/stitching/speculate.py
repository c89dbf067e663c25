"""Branches that guard nothing but pure code against poison, made straight-line code.

A Gluon call in a Triton host crosses Triton's passes inside an opaque ``scf.if`` whose else
branch yields poison (``lowering/triton_host``). Where Triton 3.6's pipeliner predicates that
call in a loop's epilogue, it folds its own condition into the ``if``, and once the region is
inlined the branch guards only the region's ops. Where those are pure, taking the then branch
always is a refinement of the poison, and it is what the pipeliner does with its own pure ops
(computes them unconditionally and selects the result): the kernel then branches where the
all-Triton kernel does, no more (upstream layer norm's mean loop with its block load ported, on
gfx942: 186 instructions against the kernel's 182, the same 182 so).
"""
from __future__ import annotations

from ..ir.canonicalize import canonicalize
from ..triton.bindings import gluon_ir
from .state import Stitch

#: ops that read and write no memory and cannot trap, taken before knowing they are needed
_PURE = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.make_range", "tt.addptr",
         "tt.fp_to_fp", "tt.bitcast", "tt.int_to_ptr", "tt.ptr_to_int", "tt.join", "tt.split", "tt.reduce",
         "tt.reduce.return", "tt.scan", "tt.scan.return", "ttg.convert_layout", "ub.poison", "scf.yield"}
#: arith's ops that can trap (integer division by zero, overflow of the signed minimum by -1)
_TRAPPING = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
             "arith.floordivsi"}


def poison_branches(module, builder) -> int:
    """Make every ``scf.if`` whose else branch yields only poison and whose then branch is pure
    take its then branch (an ``if`` on ``true``, which the canonicalizer folds next). Returns how
    many it changed."""
    ifs, children, poison = [], {}, set()

    def visit(op) -> None:   # post-order: an op's nested ops come before it
        block = op.get_block()
        if block is not None:
            children.setdefault(block.get_parent().id(), []).append(op)
        if op.get_name() == "ub.poison":
            poison.add(op.get_result(0).id())
        elif op.get_name() == "scf.if" and op.get_num_results() and op.get_num_regions() == 2:
            ifs.append(op)

    module.walk(visit)
    changed = 0
    for op in ifs:
        then_ops, else_ops = (children.get(op.get_region(i).id(), []) for i in range(2))
        if not then_ops or not else_ops or not _only_poison(else_ops, poison) or not _pure(then_ops, children):
            continue
        _take_then(builder, op, then_ops[-1].get_block())
        changed += 1
    return changed


def _only_poison(ops: list, poison: set[int]) -> bool:
    """The else branch is one ``scf.yield`` of ``ub.poison`` values (``poison``: their ids)."""
    if len(ops) != 1 or ops[0].get_name() != "scf.yield":
        return False
    return all(ops[0].get_operand(i).id() in poison for i in range(ops[0].get_num_operands()))


def _pure(ops: list, children: dict) -> bool:
    """Every op of the branch, nested ones included, reads and writes no memory and cannot trap."""
    for op in ops:
        name = op.get_name()
        if not (name in _PURE or name.startswith("math.") or (name.startswith("arith.") and name not in _TRAPPING)):
            return False
        if not all(_pure(children.get(op.get_region(i).id(), []), children) for i in range(op.get_num_regions())):
            return False
    return True


def _take_then(builder, op, then_block) -> None:
    """Replace ``op`` by an ``scf.if`` on ``true`` that owns its then block; ``op`` keeps a then
    branch of poison (it is dead, and the canonicalizer drops it)."""
    types = [op.get_result(i).get_type() for i in range(op.get_num_results())]
    builder.set_insertion_point_after(op)
    taken = builder.create_if_op(types, builder.get_int1(True), True)
    placeholder = taken.get_then_block()
    then_block.move_before(placeholder)
    placeholder.erase()
    for block in (taken.get_else_block(), builder.create_block_with_parent(op.get_region(0), [])):
        builder.set_insertion_point_to_start(block)
        builder.create_yield_op([builder.create_poison(t) for t in types])
    for i in range(len(types)):
        op.get_result(i).replace_all_uses_with(taken.get_result(i))


def speculate(state: Stitch, module) -> bool:
    """A Triton host's pass: ``poison_branches``, then the canonicalizer folds the branches made
    to take their then branch (one pass: the ``if`` on ``true`` is left for it). Whether it took one."""
    if not poison_branches(module, gluon_ir.GluonOpBuilder(state.context)):
        return False
    canonicalize(module, state.context)
    return True
