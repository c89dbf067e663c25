"""Lower one ``@triton.jit`` function on its own through the backend's tt -> ttg pipeline.

The function is generated for the call site's argument types and wrapped in a private
``noinline`` region function whose signature holds only scalars through the tt pipeline (see
``opaque.py`` for why): tensor inputs come from opaque producers and every result goes to an
opaque sink. ``make_ttgir`` is split after its tt -> ttg conversion (``compat``): there the
region function takes each tensor input as an argument in the layout the host gives it, the
way a function argument of an all-Triton kernel is a layout anchor for
``RemoveLayoutConversions``, and Triton's own passes decide the rest (an elementwise helper
computes in the host's layout, a reduction in its slice, a ``tl.dot`` still gets its MMA
layout and operand conversions). Through the ttir stage a public stub kernel calls the
region (``symbol-dce`` deletes a private function nothing calls); for the ttgir stage the region
itself is public and uncalled, so the axis facts on its arguments (the host kernel's
specialization of its scalars, ``axis_hints`` of its tensors) are what Triton's analysis starts
from, and the emptied stub remains the kernel ``get_tensordesc_metadata`` needs (it aborts on a
module without one). Everything else is Triton's own pipeline for the target (inlining,
coalescing, accelerate-matmul, pipelining, layout cleanup).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import arguments, axis_hints
from ..targets import arch
from ..ir import diagnostics
from ..ir.canonicalize import canonicalize
from ..ir.copy import copy_module
from ..ir.walk import function_blocks
from ..stitching import access_layouts, opaque, remat
from ..boundaries.scratch import ScratchProbe
from ..instrumentation.resources import layout_conversions
from ..triton import compat
from ..triton.bindings import gluon_ir, ir, parse_module
from ..triton.frontend import Language, make_backend
from ..triton.frontend import code_generator as _cg
from ..triton.language import core as tl

REGION_FUNCTION = "hybrid_region"
BODY_FUNCTION = "hybrid_region_body"
STUB_KERNEL = "hybrid_region_stub"


@dataclass
class LoweredRegion:
    """A region function in ttg form, in the host's MLIR context, ready to be spliced.

    Its arguments are the call's scalar leaves, then its tensor leaves in the host's types, in
    order; ``inputs[k]`` is the ttg type the region wants for runtime leaf ``k`` when that leaf
    is a tensor: the host's, unless Triton's passes converted the argument for an anchor of the
    region (``None`` for a scalar); ``outputs`` are the
    ttg types of the flattened results, in the layouts the region computed them in.
    """
    module: object
    function: object
    ret_type: object         # the Triton-level return type (tl.block_type, tuple_type, dtype; None: nothing)
    leaf_is_tensor: list[bool]
    inputs: list[str | None]
    outputs: list[object]
    output_sources: list[str | None]   # where the region's pipeline converted a result before its sink: the source type
    ttir: str                # the module as Triton's ttir stage left it (a Gluon host's ``asm["ttir"]``)


def lower_triton_function(fn, args: list, arg_types: list, host_types: list, *, context, options, target,
                          scalar_attrs: list | None = None, hints: list[str] | None = None,
                          result_layouts: dict | None = None) -> LoweredRegion:
    """Build ``fn`` for ``arg_types`` and run the backend's ``ttir`` and ``ttgir`` stages on it,
    its tensor inputs in ``host_types`` (the ttg types the host's tensor leaves have, in order).

    ``scalar_attrs[i]`` are ``(name, value)`` argument attributes (``tt.divisibility``) of the
    i-th scalar leaf, as the host kernel's specialization gave them: set on the region's
    arguments, they let coalescing vectorize as it would in the unported kernel. ``hints[i]`` is
    the attribute dictionary (``axis_hints``) of the i-th tensor input, what Triton's axis
    analysis may know of the host's value, so the region's loads coalesce and pipeline as the
    all-Triton kernel's do. ``result_layouts`` (result index -> Gluon layout) are the layouts its
    caller takes results in, where the region should load them in that layout
    (``issue_results_in``).

    Exceptions propagate unchanged; the caller wraps them with the region and call site.
    """
    backend = make_backend(target)
    builder = ir.builder(context)
    module = builder.create_module()
    generator = _cg.CodeGenerator(context, compat.function_prototype(args, arg_types), fn.get_capture_scope(),
                                  module=module, jit_fn=fn, function_name=BODY_FUNCTION, noinline=False,
                                  options=options, codegen_fns=backend.get_codegen_implementation(options),
                                  module_map=backend.get_module_map(), is_gluon=False,
                                  **compat.codegen_location_kwargs(fn))
    generator.visit(fn.parse())
    returned = [] if compat.returns_nothing(generator.ret_type) else arguments.leaf_types([generator.ret_type])
    if any(arguments.is_descriptor(ty) for ty in returned):   # a region's results are tensors and scalars
        raise ValueError(f"{fn.__name__} returns a tensor descriptor, which a Triton region cannot return to the code "
                         f"calling it on {arch.target_label(target)} (nor on any target): make the descriptor in the "
                         f"function that loads and stores through it")
    leaves = arguments.leaf_types(arg_types)
    leaf_is_tensor = _leaf_is_tensor(leaves, target)
    region = _add_region_function(context, module, module.get_function(BODY_FUNCTION), leaves)
    _add_stub_kernel(context, module, region)
    module.context = context
    errors = diagnostics.verify(module)
    if errors:
        raise RuntimeError(f"the region's tt IR does not verify:\n{errors}")

    stages: dict = {}
    backend.add_stages(stages, options, Language.TRITON)
    metadata: dict = {}
    module = stages["ttir"](module, metadata)
    _descriptor_constants(context, module, leaves, leaf_is_tensor)
    ttir = str(module)
    compat.convert_to_ttgpuir(module, target, options)
    take_host_layouts(context, module, leaves, host_types, scalar_attrs or [])
    if hints and any(hints):
        module = _with_hints(context, module, leaf_is_tensor.count(False), hints)
    with compat.ttgir_after_conversion(), compat.without_block_pingpong(target):
        module = stages["ttgir"](module, metadata)
    hoist_argument_conversions(context, module, len(host_types))
    issue_stores_in_value_layouts(context, module)
    issue_results_in(context, module, target, result_layouts or {})
    module = lay_out_again(context, module, target, options)
    set_visibility(module.get_function(REGION_FUNCTION), "private", gluon_ir.GluonOpBuilder(context))
    ret_type = None if compat.returns_nothing(generator.ret_type) else generator.ret_type
    return lowered_region(module, ret_type, leaf_is_tensor, [str(ty) for ty in host_types], ttir)


def _descriptor_constants(context, module, leaves: list, leaf_is_tensor: list[bool]) -> None:
    """Each descriptor Triton lowered to a pointer, shape and strides with the constants the
    all-Triton kernel's descriptor, made with them, has: its last stride the 1 every descriptor has
    (Triton makes none with another), so its blocks' last dimension is contiguous and their
    accesses vectorize alike; and its padding option where the host's is a constant
    (``pointer_descriptors.LoweredDescriptorType``), so no select of the value it reads outside."""
    if len(leaf_is_tensor) == len(leaves):   # (no descriptor lowered so)
        return
    region = module.get_function(REGION_FUNCTION)
    builder = ir.builder(context)
    builder.set_insertion_point_to_start(function_blocks(module, region)[0])
    position = 0   # the leaf's first argument among the region function's scalars
    for ty in leaves:
        if isinstance(ty, tl.block_type):
            continue
        if arguments.is_descriptor(ty):
            rank = len(ty.block_type.shape)
            region.args(position + 2 * rank).replace_all_uses_with(builder.get_int64(1))
            if getattr(ty, "padding_nan", None) is not None:
                region.args(position + 2 * rank + 1).replace_all_uses_with(builder.get_int1(ty.padding_nan))
            position += 1 + 2 * rank + compat.LOWERED_DESCRIPTOR_FLAGS
        else:
            position += 1


def _leaf_is_tensor(leaves: list, target) -> list[bool]:
    """Per argument of the lowered region function, whether it is a tensor: a descriptor where the
    target has no TMA is as many scalars as Triton's ``make_ttir`` lowers it to (its pointer,
    shape, strides and flags: ``pointer_descriptors.lowered_leaves``)."""
    out: list[bool] = []
    for ty in leaves:
        if arguments.is_descriptor(ty) and target not in arch.SM90_UP:
            out.extend([False] * (1 + 2 * len(ty.block_type.shape) + compat.LOWERED_DESCRIPTOR_FLAGS))
        else:
            out.append(isinstance(ty, tl.block_type))
    return out


def hoist_argument_conversions(context, module, num_tensors: int) -> None:
    """Where Triton's passes converted index arithmetic on a tensor argument inside the region
    (a pointer tile into a load layout an anchor chose late, such as AMD's in-thread transpose
    of a dot operand), convert the argument once at the entry and make the arithmetic again on it
    (``remat``), as the all-Triton kernel does on the host's ops: the conversion is then the
    boundary's, which the host's own arithmetic made in that layout removes."""
    region = module.get_function(REGION_FUNCTION)
    entry = function_blocks(module, region)[0]
    first = entry.get_num_arguments() - num_tensors
    arguments = [entry.arg(first + i) for i in range(num_tensors)]
    if remat.hoist_argument_conversions(module, entry, arguments, gluon_ir.GluonOpBuilder(context)):
        _canonicalize(context, module, "with its argument conversions hoisted")


def issue_stores_in_value_layouts(context, module) -> None:
    """A store of a value Triton's passes converted to its coalesced layout issued in the value's
    instead, where that writes memory as well (``access_layouts``, as in a Triton host): a tensor
    argument in the host's layout makes the region compute in it, where the all-Triton kernel
    computes in its load's, and stores from there."""
    if access_layouts.issue_stores_in_value_layouts(module, gluon_ir.GluonOpBuilder(context)):
        _canonicalize(context, module, "with its stores issued in its values' layouts")


def issue_results_in(context, module, target, result_layouts: dict) -> None:
    """Each result of ``result_layouts`` that the region loads, loaded in the layout given for it
    (``access_layouts.issue_result_in``), and the region laid out again around the new load by
    the passes that lay a host out: its sink takes the tile as loaded there. A Gluon function that
    only returns a Triton function's result hands it to a Gluon call that takes it in that layout
    (``GluonRegions``): what the all-Triton kernel does when the host's load feeds that call."""
    if not result_layouts:
        return
    builder = gluon_ir.GluonOpBuilder(context)
    sinks = opaque.find(module).sinks
    issued = [access_layouts.issue_result_in(module, builder, sinks[j].get_operand(0), layout)
              for j, layout in result_layouts.items() if j in sinks]
    if any(issued):
        _relayout(context, module, target)


def lay_out_again(context, module, target, options):
    """The region laid out again by the passes that lay a host out around its Gluon calls
    (``host_relayout``), where that leaves it fewer conversions and no more shared memory: the
    copy laid out again, or ``module`` as it was. On
    AMD, ``make_ttgir`` turns loads into buffer loads after its last layout pass, and a buffer
    load is no anchor: the second run loads a row of weights in the slice layout its use takes,
    where the first loaded it in its own and converted it through shared memory, as the host's
    own code gets it from ``host_relayout``. It is tried on a copy first, since in a pipelined
    loop it can also undo what the backend's later passes chose."""
    if target.backend != "hip":
        return module
    trial = copy_module(module, context)
    _relayout(context, trial, target)
    probe = ScratchProbe(context, target, options)
    pays = layout_conversions(str(trial)) < layout_conversions(str(module)) \
        and probe.kernel_bytes(copy_module(trial, context)) \
        <= probe.kernel_bytes(copy_module(module, context))
    return trial if pays else module


def _relayout(context, module, target) -> None:
    pm = ir.pass_manager(context)
    compat.add_host_relayout(pm, target)
    diagnostics.run(pm, module, "hybrid_region_relayout")
    _canonicalize(context, module, "laid out again")


def _canonicalize(context, module, rewritten: str) -> None:
    """The region ``module`` canonicalized after a rewrite (which left dead ops behind), and
    verified; RuntimeError, saying which rewrite, where it does not verify."""
    canonicalize(module, context)
    errors = diagnostics.verify(module)
    if errors:
        raise RuntimeError(f"the region {rewritten} does not verify:\n{errors}")


def _with_hints(context, module, num_scalars: int, hints: list[str]):
    """``module`` re-parsed with ``hints`` on the region function's tensor arguments (the
    bindings set only integer argument attributes; these are per-dimension arrays)."""
    text = axis_hints.with_argument_attributes(
        str(module), REGION_FUNCTION, {num_scalars + i: hint for i, hint in enumerate(hints)})
    hinted = parse_module(text, context)
    errors = diagnostics.verify(hinted)
    if errors:
        raise RuntimeError(f"the region with its host's axis hints does not verify:\n{errors}")
    return hinted


def lowered_region(module, ret_type, leaf_is_tensor: list[bool], host_types: list[str], ttir: str) -> LoweredRegion:
    """The ``LoweredRegion`` of a lowered region's ttg ``module`` (fresh, or re-parsed from a
    cache by ``lowering_cache``): its ports are found by their markers, the types its inputs
    want by the conversions of its arguments."""
    ports = opaque.find(module)
    wanted = iter(_wanted_inputs(module, host_types))
    inputs = [next(wanted) if is_tensor else None for is_tensor in leaf_is_tensor]
    outputs = [ports.sinks[j].get_operand(0).get_type() for j in range(len(ports.sinks))]
    sources = [str(ports.sink_conversions[j].get_operand(0).get_type()) if j in ports.sink_conversions else None
               for j in range(len(ports.sinks))]
    return LoweredRegion(module, module.get_function(REGION_FUNCTION), ret_type, leaf_is_tensor, inputs, outputs,
                         sources, ttir)


def _wanted_inputs(module, host_types: list) -> list[str]:
    """Per tensor input, the type the region's first conversion of its argument produces (an
    anchor inside wanted another layout), or the host's type where the region uses it as given."""
    entry = function_blocks(module, module.get_function(REGION_FUNCTION))[0]
    first = entry.get_num_arguments() - len(host_types)
    arguments = {entry.arg(first + i).id(): i for i in range(len(host_types))}
    wanted = [str(ty) for ty in host_types]
    converted: set[int] = set()

    def visit(op):
        index = arguments.get(op.get_operand(0).id()) if op.get_name() == "ttg.convert_layout" else None
        if index is not None and index not in converted:
            converted.add(index)
            wanted[index] = str(op.get_result(0).get_type())

    module.walk(visit)
    return wanted


def _add_region_function(context, module, body, leaves: list):
    """``hybrid_region(scalars...)``: producers, the call of ``body``, sinks."""
    builder = ir.builder(context)
    scalar_types = [body.args(k).get_type() for k, ty in enumerate(leaves) if not isinstance(ty, tl.block_type)]
    signature = builder.get_function_ty(scalar_types, [])
    region = builder.get_or_insert_function(module, REGION_FUNCTION, signature, "private", True)
    module.push_back(region)
    entry = region.add_entry_block()
    builder.set_insertion_point_to_start(entry)
    values, next_scalar = [], 0
    for k, ty in enumerate(leaves):
        if isinstance(ty, tl.block_type):
            values.append(opaque.produce(builder, body.args(k).get_type(), list(ty.shape), k))
        else:
            values.append(region.args(next_scalar))
            next_scalar += 1
    call = builder.call(body, values)
    opaque.sink_all(builder, [call.get_result(i) for i in range(call.get_num_results())])
    builder.set_insertion_point_to_end(entry)
    builder.ret([])
    return region


def _add_stub_kernel(context, module, region) -> None:
    """A public kernel whose only job is to call the region through the ttir stage (forwarding
    its arguments), so that stage keeps it."""
    builder = ir.builder(context)
    num_args = region.get_num_args()
    arg_types = [region.args(i).get_type() for i in range(num_args)]
    stub = builder.get_or_insert_function(module, STUB_KERNEL, builder.get_function_ty(arg_types, []), "public", False)
    module.push_back(stub)
    builder.set_insertion_point_to_start(stub.add_entry_block())
    builder.call(region, [stub.args(i) for i in range(num_args)])
    builder.ret([])


def take_host_layouts(context, module, leaves: list, host_types: list, scalar_attrs: list) -> None:
    """In the freshly converted ttg module, make the region function take its tensor inputs as
    arguments of ``host_types`` (after its scalars) in place of their producers, and make it a
    root of the call graph for the ttgir stage: public, called by no one (the stub kernel is
    emptied), its scalar arguments carrying the host kernel's ``scalar_attrs``.

    A producer whose type differs from the host's (the conversion's default layout) becomes a
    ``convert_layout`` of the argument: ``RemoveLayoutConversions`` removes it by propagating the
    argument's layout forward, or keeps it where an anchor in the region wants another layout.
    A root's arguments keep their axis attributes; those of a called function are overwritten
    with what the call site's (opaque) values tell Triton's call-graph analysis.
    A producer of a 1-element tile that Triton's canonicalizer made scalar (an elementwise op on
    a splat becomes a splat of the scalar op) takes the argument's one element (``tt.unsplat``).
    """
    builder = gluon_ir.GluonOpBuilder(context)
    region, stub = module.get_function(REGION_FUNCTION), module.get_function(STUB_KERNEL)
    scalar_types = [region.args(i).get_type() for i in range(region.get_num_args())]
    region.reset_type(builder.get_function_ty(scalar_types + list(host_types), []))
    entry = function_blocks(module, region)[0]
    arguments_of: dict[int, object] = {}
    for k, ty in zip([k for k, leaf in enumerate(leaves) if isinstance(leaf, tl.block_type)], host_types):
        entry.add_argument(ty)
        arguments_of[k] = entry.arg(entry.get_num_arguments() - 1)
    for k, producers in opaque.find(module).producers.items():
        for producer in producers:
            result = producer.get_result(0)
            value = arguments_of[k]
            if not str(result.get_type()).startswith("tensor<"):
                builder.set_insertion_point_after(producer)
                value = builder.create_unsplat(value)
            elif str(result.get_type()) != str(value.get_type()):
                builder.set_insertion_point_after(producer)
                value = builder.create_convert_layout(result.get_type(), value)
            result.replace_all_uses_with(value)
    for i, attrs in enumerate(scalar_attrs):
        for name, value in attrs:
            region.set_arg_attr(i, name, value)
    set_visibility(region, "public", builder)

    old_entry = function_blocks(module, stub)[0]
    builder.set_insertion_point_to_start(builder.create_block_with_parent(stub.get_region(0), scalar_types))
    builder.ret([])
    old_entry.erase()


def set_visibility(function, visibility: str, builder) -> None:
    function.set_attr("sym_visibility", builder.get_string_attr(visibility))
