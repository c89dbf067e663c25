"""Build one ``@gluon.jit`` function as a ttg function, exactly as its author wrote it.

Gluon needs every tensor argument's layout to generate code, so a Gluon region inside a
Triton host is built twice: once during the host's code generation with a placeholder layout
per tensor (only to learn its result types, which no layout changes), and once after the
host's ``make_ttgir`` with the layouts Triton's passes gave the arguments.
"""
from __future__ import annotations

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

from . import pointer_descriptors
from ..targets import arch
from .arguments import is_descriptor
from ..boundaries.movement import linear
from ..instrumentation import timing
from ..triton import compat
from ..triton.bindings import ir
from ..triton.frontend import code_generator as _cg
from ..triton.frontend import make_backend
from ..triton.language import core as tl

#: the function a probe build creates
PROBE = "hybrid_gluon_probe"


def build_gluon_function(fn, args: list, arg_types: list, *, module, context, options, target, name: str):
    """Generate ``fn`` for ``arg_types`` into ``module`` as the private function ``name`` (the
    splice calls it and Gluon's inliner inlines it); returns (the function, its return type)."""
    backend = make_backend(target)
    generator = _cg.CodeGenerator(context, compat.function_prototype(args, arg_types), fn.get_capture_scope(),
                                  module=module, jit_fn=fn, function_name=name, noinline=False, options=options,
                                  codegen_fns=backend.get_codegen_implementation(options),
                                  module_map=backend.get_module_map(), is_gluon=True,
                                  **compat.codegen_location_kwargs(fn))
    generator.visit(fn.parse())
    return module.get_function(name), generator.ret_type


@timing.timed("Gluon region probe builds")
def probe(fn, args: list, wants: dict, *, context, options, target) -> tuple[object, object]:
    """``fn``'s return type for ``args`` (tensors of Triton type) and the module of a throwaway
    build in which every tensor argument has its declared type (``wants``, ``handoff.Want`` by
    parameter name) or a placeholder blocked layout (its ops are the ones the real build will
    have, so it is also where architecture checks look)."""
    builder = ir.builder(context)
    module = builder.create_module()
    backend = make_backend(target)
    module.set_attr("ttg.target", builder.get_string_attr(backend.get_target_name(options)))
    module.set_attr("ttg.num-warps", builder.get_int32_attr(options.num_warps))
    module.set_attr("ttg.num-ctas", builder.get_int32_attr(options.num_ctas))
    module.set_attr("ttg.threads-per-warp", builder.get_int32_attr(options.warp_size))
    tma_target = target in arch.SM90_UP
    placeholder_types = [wants[name].gluon_type(arg.type) if name in wants else
                         placeholder_type(arg.type, options, tma_target) for name, arg in zip(fn.arg_names, args)]
    _, ret_type = build_gluon_function(fn, args, placeholder_types, module=module, context=context, options=options,
                                       target=target, name=PROBE)
    return ret_type, module


def linear_placeholder(ty: tl.block_type, options, builder):
    """The placeholder layout of a tile of type ``ty`` as a linear layout: the same placement,
    written as no code writes a layout by chance (``handoff.entry_layouts``)."""
    return linear(builder, placeholder_type(ty, options).layout, list(ty.shape))


def placeholder_type(ty, options, tma_target: bool = True):
    """The type a probe builds a parameter of Triton type ``ty`` for: a tile in a blocked layout, a
    tensor descriptor in the default NVMMA layout of its block (on a target without TMA, the
    ``PointerDescriptor`` Triton lowers it to)."""
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([placeholder_type(t, options, tma_target) for t in ty.types], ty.fields)
    if isinstance(ty, tl.block_type):
        rank = len(ty.shape)
        layout = gl.BlockedLayout([1] * rank, [1] * (rank - 1) + [options.warp_size],
                                  [1] * (rank - 1) + [options.num_warps], list(reversed(range(rank))))
        return gl.distributed_type(ty.element_ty, ty.shape, layout)
    if is_descriptor(ty) and not tma_target:
        return pointer_descriptors.view_type(ty)
    if is_descriptor(ty):
        return gluon_descriptor_type(ty, gl.NVMMASharedLayout.get_default_for(list(ty.block_type.shape),
                                                                             ty.block_type.element_ty))
    return ty


def gluon_descriptor_type(ty, layout):
    """Gluon's TMA descriptor type for a Triton tensor descriptor type ``ty``, in shared ``layout``
    (the NVMMA layout Triton's passes gave the descriptor; a probe takes the default one)."""
    return tma.tensor_descriptor_type(ty.block_type, ty.shape_type, ty.strides_type, layout)


def to_triton_type(ty):
    """The Triton type of a Gluon value type (a distributed tensor loses its layout; a shared
    buffer is loaded into one at the boundary)."""
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([to_triton_type(t) for t in ty.types], ty.fields)
    if isinstance(ty, (tl.block_type, gl.shared_memory_descriptor_type)):
        return tl.block_type(ty.element_ty, ty.shape)
    return ty
