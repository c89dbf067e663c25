"""The users of every value of a module and the ops a rewrite starts from, in one walk: what the
rewrites (folding, sinking, staging loads, handoffs) each need before they change anything."""
from __future__ import annotations

from typing import Callable


def uses(module, selected: Callable[[object], bool]) -> tuple[dict[int, list], list]:
    """(value id -> the ops that use it, the ops ``selected`` picks), in program order."""
    users: dict[int, list] = {}
    picked: list = []

    def visit(op):
        for i in range(op.get_num_operands()):
            users.setdefault(op.get_operand(i).id(), []).append(op)
        if selected(op):
            picked.append(op)

    module.walk(visit)
    return users, picked


def producers(module) -> dict[int, object]:
    """value id -> the op that defines it (block arguments have none)."""
    found: dict[int, object] = {}

    def visit(op):
        for i in range(op.get_num_results()):
            found[op.get_result(i).id()] = op

    module.walk(visit)
    return found


def owners(module) -> dict[int, object]:
    """region id -> the op that holds the region."""
    found: dict[int, object] = {}

    def visit(op):
        found.update((op.get_region(i).id(), op) for i in range(op.get_num_regions()))

    module.walk(visit)
    return found
