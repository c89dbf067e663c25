"""Stitch lowered regions into a host module at the ttg level, inline them, fold boundaries.

All of it is structural MLIR through Triton's bindings: a region's body block is moved into
the host's placeholder function (same signature, same MLIR context), Gluon's inliner inlines
it, and boundary conversion chains are rewritten op by op. The module is verified after each
step that changes it, so a malformed module raises here instead of aborting later in C++.
"""
from __future__ import annotations

from triton._C.libtriton import gluon_ir, ir, passes

from .boundary import TAG


class StitchError(RuntimeError):
    """The stitched module failed verification; the session turns this into a RegionError."""


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


def splice(host_module, placeholder, region_module, region_function) -> None:
    """Move ``region_function``'s body into the body-less ``placeholder`` of the same type.

    ``region_function`` is left without a body; it must not be used afterwards.
    """
    blocks = function_blocks(region_module, region_function)
    if not blocks:
        raise StitchError("the lowered region function has no body")
    anchor = placeholder.add_entry_block()
    for block in blocks:
        block.move_before(anchor)
    anchor.erase()


def returned_values(region_module, region_function) -> list[tuple[object, object]]:
    """The values ``region_function``'s top-level ``tt.return`` returns, each with the
    ``ttg.convert_layout`` op that produced it (the lowering's conversion to the signature's
    layout) or ``None``."""
    region_id = region_function.get_region(0).id()
    conversions: dict[int, object] = {}
    returned: list[tuple[object, object]] = []

    def visit(op):
        if op.get_name() == "ttg.convert_layout":
            conversions[op.get_result(0).id()] = op
        elif op.get_name() == "tt.return" and op.get_block().get_parent().id() == region_id:
            for i in range(op.get_num_operands()):
                value = op.get_operand(i)
                returned.append((value, conversions.get(value.id())))

    region_module.walk(visit)
    return returned


def called_symbols(module) -> set[str]:
    """Callees of the ``tt.call`` ops in ``module`` (a call in discarded IR is not among them)."""
    called: set[str] = set()

    def visit(op):
        if op.get_name() == "tt.call":
            called.add(op.get_flat_symbol_ref_attr("callee"))

    module.walk(visit)
    return called


def inline(module, context) -> None:
    pm = ir.pass_manager(context)
    passes.gluon.add_inliner(pm)
    pm.run(module, "hybrid_inline")
    _verify(module, "inlining the regions")


def fold_boundary_conversions(module, context) -> None:
    """Rewrite ``convert(convert(x))`` to ``convert(x)`` (or ``x``) where either is a boundary's.

    Only chains that touch a tagged boundary conversion are rewritten: conversions the Gluon
    author wrote between their own values stay as written. The folded conversion keeps the
    outer one's result type (the layout the consumer asked for) and its tag. Dead conversions
    are removed by the Gluon canonicalizer afterwards.
    """
    builder = gluon_ir.GluonOpBuilder(context)
    source_of: dict[int, object] = {}   # result id of a conversion -> its (already folded) source value
    tag_of: dict[int, str] = {}
    rewrites: list[tuple[object, str]] = []

    def visit(op):
        if op.get_name() != "ttg.convert_layout":
            return
        result = op.get_result(0)
        source = op.get_operand(0)
        own_tag = op.get_str_attr(TAG)
        inner_tag = tag_of.get(source.id())
        root = source_of.get(source.id()) if (own_tag or inner_tag) else None
        source_of[result.id()] = root if root is not None else source
        if own_tag:
            tag_of[result.id()] = own_tag
        if root is not None:
            rewrites.append((op, own_tag or inner_tag))

    module.walk(visit)
    for op, boundary_tag in rewrites:
        result = op.get_result(0)
        root = source_of[result.id()]
        if str(root.get_type()) == str(result.get_type()):
            result.replace_all_uses_with(root)
            continue
        builder.set_insertion_point_after(op)
        folded = builder.create_convert_layout(result.get_type(), root)
        folded.set_loc(result.get_loc())
        folded.set_attr(TAG, builder.get_string_attr(boundary_tag))
        result.replace_all_uses_with(folded)

    pm = ir.pass_manager(context)
    passes.gluon.add_canonicalizer(pm)
    pm.run(module, "hybrid_fold_boundaries")
    _verify(module, "folding boundary conversions")


def live_boundary_conversions(module) -> dict[str, list[tuple[str, str]]]:
    """Per boundary tag, the (source type, result type) of each conversion still in the module."""
    found: dict[str, list[tuple[str, str]]] = {}

    def visit(op):
        if op.get_name() == "ttg.convert_layout":
            boundary_tag = op.get_str_attr(TAG)
            if boundary_tag:
                found.setdefault(boundary_tag, []).append(
                    (str(op.get_operand(0).get_type()), str(op.get_result(0).get_type())))

    module.walk(visit)
    return found


def _verify(module, step: str) -> None:
    if not module.verify():
        raise StitchError(f"the stitched module does not verify after {step} (MLIR diagnostics above)")
