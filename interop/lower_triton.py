"""Lower one ``@triton.jit`` function on its own through the backend's tt -> ttg pipeline.

The function is generated as a private ``noinline`` function for the call site's argument
types, next to a public stub kernel that calls it. The stub matters: ``make_ttgir`` ends with
``get_tensordesc_metadata`` (which aborts on a module without a public kernel) and
``symbol-dce`` deletes a private function nothing calls. Everything else is Triton's own
pipeline for the target (coalescing, accelerate-matmul, pipelining, layout cleanup).
"""
from __future__ import annotations

from dataclasses import dataclass

from triton._C.libtriton import ir
from triton.backends.compiler import Language
from triton.compiler import code_generator as _cg
from triton.compiler.compiler import make_backend

from . import compat

REGION_FUNCTION = "hybrid_region"
STUB_KERNEL = "hybrid_region_stub"


@dataclass
class LoweredRegion:
    """A region function in ttg form, in the host's MLIR context, ready to be spliced."""
    module: object
    function: object
    ret_type: object  # the Triton-level return type (tl.block_type, tuple_type, dtype or void)


def lower_triton_function(fn, args: list, arg_types: list, *, context, options, target) -> LoweredRegion:
    """Build ``fn`` for ``arg_types`` and run the backend's ``ttir`` and ``ttgir`` stages on it.

    Exceptions propagate unchanged; the caller wraps them with the region and call site.
    """
    backend = make_backend(target)
    builder = ir.builder(context)
    module = builder.create_module()
    generator = _cg.CodeGenerator(context, compat.function_prototype(args, arg_types), fn.get_capture_scope(),
                                  module=module, jit_fn=fn, function_name=REGION_FUNCTION, noinline=True,
                                  options=options, codegen_fns=backend.get_codegen_implementation(options),
                                  module_map=backend.get_module_map(), is_gluon=False,
                                  **compat.codegen_location_kwargs(fn))
    generator.visit(fn.parse())
    region = module.get_function(REGION_FUNCTION)
    _add_stub_kernel(builder, module, region)
    module.context = context
    if not module.verify():
        raise RuntimeError("the region's tt IR does not verify (see the diagnostics above)")

    stages: dict = {}
    backend.add_stages(stages, options, Language.TRITON)
    metadata: dict = {}
    module = stages["ttgir"](stages["ttir"](module, metadata), metadata)
    return LoweredRegion(module, module.get_function(REGION_FUNCTION), generator.ret_type)


def _add_stub_kernel(builder, module, region) -> None:
    """A public kernel whose only job is to call the region, forwarding its arguments."""
    num_args = region.get_num_args()
    arg_types = [region.args(i).get_type() for i in range(num_args)]
    stub = builder.get_or_insert_function(module, STUB_KERNEL, builder.get_function_ty(arg_types, []), "public", False)
    module.push_back(stub)
    builder.set_insertion_point_to_start(stub.add_entry_block())
    builder.call(region, [stub.args(i) for i in range(num_args)])
    builder.ret([])
