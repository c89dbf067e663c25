"""Gluon's canonicalizer, run after a rewrite to delete what it left dead; MLIR's loop-invariant code motion."""
from __future__ import annotations

from . import diagnostics
from ..triton.bindings import ir, passes


def canonicalize(module, context) -> None:
    """Gluon's canonicalizer: deletes what a rewrite left dead (conversions, markers made pure)."""
    pm = ir.pass_manager(context)
    passes.gluon.add_canonicalizer(pm)
    diagnostics.run(pm, module, "hybrid_canonicalize")


def hoist_invariants(module, context) -> None:
    """MLIR's loop-invariant code motion: pure ops whose operands a loop does not change, before it."""
    pm = ir.pass_manager(context)
    passes.common.add_licm(pm)
    diagnostics.run(pm, module, "hybrid_licm")
