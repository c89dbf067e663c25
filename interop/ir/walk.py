"""A function's blocks, ops and result types, and a module's callees: what the bindings give no
direct accessor for, read off ``module.walk``."""
from __future__ import annotations

from typing import Callable

from .uses import owners


def function_blocks(module, function) -> list:
    """The top-level blocks of ``function`` in ``module`` (the bindings have no direct accessor)."""
    region_id = function.get_region(0).id()
    blocks: list = []

    def visit(op):
        block = op.get_block()
        if block is not None and block.get_parent().id() == region_id and all(b.id() != block.id() for b in blocks):
            blocks.append(block)

    module.walk(visit)
    return blocks


def walk_function(module, function, visit: Callable[[object], object]) -> None:
    """``visit`` each op inside ``function`` of ``module``, in ``module.walk``'s order."""
    region_id = function.get_region(0).id()
    memo: dict[int, bool] = {}

    def inside(block) -> bool:
        region = block.get_parent()
        if region.id() not in memo:
            enclosing = region
            while enclosing is not None and enclosing.id() != region_id:
                enclosing = enclosing.get_parent_region()
            memo[region.id()] = enclosing is not None
        return memo[region.id()]

    module.walk(lambda op: visit(op) if op.get_block() is not None and inside(op.get_block()) else None)


def result_types(module, function) -> list:
    """``function``'s result types, read off a ``tt.return`` of its body (the bindings give a
    function type's parameters only)."""
    region = function.get_region(0).id()
    found: list = []

    def visit(op):
        if not found and op.get_name() == "tt.return" and op.get_block().get_parent().id() == region:
            found.append([op.get_operand(k).get_type() for k in range(op.get_num_operands())])

    module.walk(visit)
    return found[0] if found else []


def called_symbols(module) -> set[str]:
    """Callees of the ``tt.call`` ops in ``module`` (a call in discarded IR is not among them)."""
    called: set[str] = set()

    def visit(op):
        if op.get_name() == "tt.call":
            called.add(op.get_flat_symbol_ref_attr("callee"))

    module.walk(visit)
    return called


#: The ops whose body runs more than once.
LOOPS = {"scf.for", "scf.while"}


def calls_in_loops(module, callees: set[str]) -> bool:
    """Whether a ``tt.call`` of one of ``callees`` sits inside a loop of its function."""
    calls: list = []
    module.walk(lambda op: calls.append(op) if op.get_name() == "tt.call"
                and op.get_flat_symbol_ref_attr("callee") in callees else None)
    if not calls:
        return False
    holder = owners(module)
    for call in calls:
        block = call.get_block()
        while block is not None and (owner := holder.get(block.get_parent().id())) is not None:
            if owner.get_name() in LOOPS:
                return True
            block = owner.get_block()
    return False
