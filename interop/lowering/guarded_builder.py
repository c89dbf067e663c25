"""Gluon builder calls whose bad operands abort the process upstream, checked in Python first.

Gluon builds some ops with inferred result types; when inference fails (``warpgroup_mma`` on a
shared operand whose layout is not NVMMA-swizzled) MLIR calls ``report_fatal_error`` and the
process dies. ``guard`` turns the code generator's builder into ``GuardedGluonBuilder``, whose
overrides raise ``ValueError`` instead; the code generator reports it at the op's file:line.
"""
from __future__ import annotations

from ..triton.bindings import gluon_ir


class GuardedGluonBuilder(gluon_ir.GluonOpBuilder):
    __slots__ = ()   # the same object layout as the base, so an existing builder can be retyped

    def create_warpgroup_mma(self, a, b, acc, *rest):
        for operand, value in (("A", a), ("B", b)):
            ty = str(value.get_type())
            if ty.startswith("!ttg.memdesc") and "#ttg.nvmma_shared" not in ty:
                raise ValueError(f"warpgroup_mma operand {operand} is in shared memory of type {ty}: wgmma reads "
                                 "shared operands only in an NVMMASharedLayout (gl.NVMMASharedLayout.get_default_for)")
        return super().create_warpgroup_mma(a, b, acc, *rest)


def guard(builder) -> None:
    """Retype ``builder`` (a ``GluonOpBuilder`` with its insertion point and location) in place."""
    builder.__class__ = GuardedGluonBuilder
