"""Triton regions: calls from Gluon code to ``@triton.jit`` functions, in one compile.

During code generation each call is lowered on its own through Triton's tt -> ttg passes
(``lower_triton``, cached by ``lowering_cache``) for the call site's argument types and the
host's layouts, and the host gets a call to a placeholder plus opaque result values. After
code generation ``splice_calls`` (a pass of ``interop.pipeline``) moves each lowered body into
its placeholder; the passes after it inline, connect results, fold and plan the boundaries. The host is a Gluon kernel,
or, in a Triton host, a Gluon region's function that calls Triton code.
"""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

from . import arguments, axis_hints, interception, lowering_cache, pointer_descriptors
from ..targets import arch
from ..stitching import opaque, runner, stitch
from .. import locations, validate
from ..instrumentation import instrument, timing
from ..boundaries import swizzle
from ..boundary import BoundaryTag, layout_of, tile_bytes
from ..ir.walk import function_blocks
from ..errors import NoResult, RegionError, as_region_error, host_descriptor_into_region
from .lower_triton import LoweredRegion, lower_triton_function
from ..region import CallSite, Region
from ..triton import compat
from ..triton.frontend import code_generator as _cg
from ..triton.language import HostDescriptorType
from ..triton.language import core as tl
from ..stitching.state import Stitch

@dataclass(frozen=True)
class RecordedCall:
    """A Triton call's lowering, kept by ``recording_lowerings`` for ``hybrid port``."""
    fn: object                    # the ``@triton.jit`` function called
    lowered: LoweredRegion
    text: str                     # its module printed with locations, before the splice moves its body
    leaf_names: list[str]         # the names of its runtime arguments, in order
    specialized: dict             # a non-constexpr parameter the call passed a constant for -> that value
    constexprs: dict = field(default_factory=dict)   # each constexpr parameter -> the value the call passed


@contextlib.contextmanager
def recording_lowerings():
    """Within the block, every Triton region a Gluon host calls is appended, as a ``RecordedCall``,
    to the list this yields, in call order: what ``hybrid port`` writes back out as Gluon. Read
    off the regions about to be spliced (``splice_calls``), by an observer of the pipeline."""
    recorded: list[RecordedCall] = []

    def see(state: Stitch, module) -> None:
        recorded.extend(pending.recorded() for pending in state.compile.triton.pending_splices)

    with runner.observing(runner.Observer(splice_calls, see, before=True)):
        yield recorded


_HINT = ("the Triton function is lowered on its own for the call site's argument types; "
         "fix it or the arguments passed at the call site")


@dataclass(frozen=True)
class PendingSplice:
    """A lowered Triton region waiting for its placeholder to be given its body."""
    region: Region
    lowered: LoweredRegion
    placeholder: object      # the private function the host calls
    tensor_types: tuple      # the host's types of the tensor arguments, in order
    fn: object               # the ``@triton.jit`` function called
    args: list               # the arguments it was called with, bound to its parameters
    leaf_names: tuple        # the region's arguments, named (a ``PointerDescriptor``'s as its lowered fields)

    def recorded(self) -> RecordedCall:
        """This call as ``recording_lowerings`` keeps it (its module printed before the splice)."""
        fn, args = self.fn, self.args
        constants = {p.name: arg.value for p, arg in zip(fn.params, args)
                     if not p.is_constexpr and isinstance(arg, tl.constexpr)}
        given = {p.name: getattr(arg, "value", arg) for p, arg in zip(fn.params, args) if p.is_constexpr}
        return RecordedCall(fn, self.lowered, str(self.lowered.module),
                            list(self.leaf_names), constants, given)


class TritonRegions:
    """The Triton regions of one compile (``CompileContext``)."""

    def __init__(self, compile_context):
        self.cc = compile_context
        self._pending: list[PendingSplice] = []
        self._spare: dict[str, LoweredRegion] = {}   # lowered during a dry visit, for the real visit
        self._results: dict[int, tuple[Region, int]] = {}   # a region result's value id -> (region, result index)
        self._kernel_args: dict | None = None   # the host kernel's argument value ids -> their attributes

    # -- during code generation -------------------------------------------------------------
    def call(self, gen, fn, args, kwargs, probing: bool):
        """A Triton call in Gluon code: lowered now, spliced after code generation. ``probing``:
        ``gen`` builds a Gluon function only for its result types (nothing is spliced)."""
        call_site = CallSite.of(gen)
        name = fn.__name__
        args = arguments.bind(fn, args, kwargs)
        arg_types = [_region_type(arg, name, call_site) for arg in args]
        leaves = _leaves(gen.builder, args, fn.arg_names)
        self._check_host_layouts(name, call_site, leaves)
        host_types = [leaf.handle.get_type() for _, leaf in leaves if isinstance(leaf.type, tl.block_type)]
        specialization = f"{name}({', '.join(str(t) for t in arg_types)})"
        if host_types:   # the region is lowered in the host's layouts: they belong to its specialization
            specialization += f" in {', '.join(str(t) for t in host_types)}"
        scalar_attrs = self._scalar_attrs(gen, leaves, probing,
                                          any(pointer_descriptors.is_pointer_descriptor(arg) for arg in args))
        if any(scalar_attrs):
            specialization += f" {scalar_attrs}"
        hints = self._hints(gen, leaves)
        if any(hints):
            specialization += f" {hints}"
        result_layouts = {} if probing else self.cc.gluon.result_layouts_of(gen)
        if result_layouts:
            specialization += f" -> {result_layouts}"
        dry = compat.in_loop_carry_discovery(gen) or probing
        lowered = self._spare.get(specialization) if dry else self._spare.pop(specialization, None)
        if lowered is None:
            with as_region_error(name, call_site, _HINT), interception.inside_triton_region(f"'{name}' called at "
                                                                                          f"{call_site}"):
                lowered = self._lower(fn, args, arg_types, host_types, scalar_attrs, hints, result_layouts)
            if dry:
                self._spare[specialization] = lowered
        _check_descriptors(name, call_site, leaves, lowered)
        if dry:  # this IR is discarded: results of the right types suffice, and no call is left behind
            results = [gen.builder.create_poison(ty) for ty in lowered.outputs]
        else:
            results = self._emit_call(gen, fn, specialization, call_site, lowered, args, leaves)
        if lowered.ret_type is None or lowered.ret_type == tl.void:
            return NoResult(name, str(call_site))
        host_type = _host_type(lowered.ret_type, iter(results), gen.builder)
        return next(_cg.unflatten_ir_values(results, [host_type]))

    def _check_host_layouts(self, name: str, call_site: CallSite, leaves: list) -> None:
        """The region is lowered in the host's layouts, so one invalid for the target (written for
        another warp size or warp count) would fail inside Triton's passes; say so here instead."""
        for value_name, leaf in leaves:
            layout = getattr(leaf.type, "layout", None)
            problem = layout and validate.layout_problem(layout, self.cc.options.warp_size, self.cc.options.num_warps,
                                                         arch.describe(self.cc.target))
            if problem:
                raise RegionError(name, str(call_site), f"the host's layout of '{value_name}': {problem}")

    def _emit_call(self, gen, fn, specialization: str, call_site: CallSite, lowered: LoweredRegion, args,
                   leaves: list) -> list:
        """Declare the placeholder and call it with the scalars, then the tensors.

        The results are opaque placeholders for now (``opaque.result_placeholder``):
        ``stitch.connect_results`` replaces them with the region's values once it is inlined.
        """
        region = self.cc.new_region(fn.__name__, "triton", call_site, specialization,
                                    shared_bytes=arch.allocated_shared_bytes(lowered.module),
                                    lines=tuple(locations.lines_of(str(lowered.module))))
        self.cc.ttir[region.index] = lowered.ttir
        scalars = [leaf.handle for (_, leaf), tensor in zip(leaves, lowered.leaf_is_tensor) if not tensor]
        tensors = [leaf.handle for (_, leaf), tensor in zip(leaves, lowered.leaf_is_tensor) if tensor]
        handles = scalars + tensors
        builder = _cg.ir.builder(self.cc.context)  # a fresh builder creates the function detached
        signature = builder.get_function_ty([h.get_type() for h in handles], [])
        placeholder = builder.get_or_insert_function(gen.module, region.symbol, signature, "private", False)
        gen.module.push_back(placeholder)
        self._pending.append(PendingSplice(region, lowered, placeholder, tuple(h.get_type() for h in tensors), fn,
                                           args, tuple(name for name, _ in leaves)))
        with instrument.around(gen.builder, region, self.cc.settings.instrument_regions):
            gen.builder.call(placeholder, handles)
        results = [opaque.result_placeholder(gen.builder, ty, stitch.result_key(region.index, j), stitch.RESULT)
                   for j, ty in enumerate(lowered.outputs)]
        self._results.update((value.id(), (region, j)) for j, value in enumerate(results))
        self._plan_boundaries(region, lowered, leaves)
        return results

    def _scalar_attrs(self, gen, leaves: list, probing: bool, derive: bool) -> list[list]:
        """Per scalar leaf, the specialization attributes of the host kernel argument it is
        (``[]`` for any other value, and while probing: a probe's module has no kernel). In a
        Gluon region of a Triton host, an argument of the region stands for the Triton host's
        operand (``GluonRegions.operands_of``): a kernel argument there keeps its attributes.
        ``derive``: the region takes a descriptor Triton lowers to a pointer, shape and strides
        (``pointer_descriptors``), whose accesses Triton vectorizes by what it knows of those and
        of the offsets: any other integer takes the divisibility Triton's axis analysis gives it in
        the host (a program id times a block size, a kernel argument widened: ``axis_hints``), as
        the all-Triton kernel's own analysis has it, so they vectorize alike."""
        if probing:
            return [[] for _, leaf in leaves if not isinstance(leaf.type, tl.block_type)]
        if self.cc.kernel_arg_attrs and self._kernel_args is None:
            kernel = gen.module.get_function(gen.module.get_entry_func_name())
            self._kernel_args = {kernel.args(i).id(): attrs for i, attrs in enumerate(self.cc.kernel_arg_attrs)}
        known, outer = self._kernel_args or {}, self.cc.gluon.operands_of(gen)
        host = None
        out = []
        for _, leaf in leaves:
            if isinstance(leaf.type, tl.block_type):
                continue
            attrs = known.get(outer.get(leaf.handle.id(), leaf.handle.id()), [])
            if not attrs and derive and leaf.type in (tl.int32, tl.int64):
                host = host or axis_hints.HostValues(gen.module, gen.builder, known, outer)
                divisibility = host.facts(leaf.handle.id(), str(leaf.handle.get_type())).divisibility[0]
                attrs = [["tt.divisibility", min(divisibility, 16)]] if divisibility > 1 else []
            out.append(attrs)
        return out

    def _hints(self, gen, leaves: list) -> list[str]:
        """Per tensor leaf, what Triton's axis analysis may know of the host's value
        (``axis_hints``), so the region's loads from host-built pointers coalesce and pipeline."""
        tensors = [leaf for _, leaf in leaves if isinstance(leaf.type, tl.block_type)]
        if not tensors:
            return []
        host = axis_hints.HostValues(gen.module, gen.builder, self._kernel_args or {},
                                    self.cc.gluon.operands_of(gen))
        return [host.hints(leaf.handle) for leaf in tensors]

    @timing.timed("Triton region lowering")
    def _lower(self, fn, args, arg_types, host_types: list, scalar_attrs: list, hints: list[str],
               result_layouts: dict) -> LoweredRegion:
        cc, printed = self.cc, [str(ty) for ty in host_types]
        return lowering_cache.lowered(
            lowering_cache.key(fn, args, arg_types, printed, scalar_attrs, cc.options, cc.target, hints,
                               {j: str(layout) for j, layout in result_layouts.items()}),
            cc.context, printed, lambda: lower_triton_function(fn, args, arg_types, host_types, context=cc.context,
                                                               options=cc.options, target=cc.target,
                                                               scalar_attrs=scalar_attrs, hints=hints,
                                                               result_layouts=result_layouts))

    def _plan_boundaries(self, region: Region, lowered: LoweredRegion, leaves: list) -> None:
        """Inputs go from the host's layout to the one the region wants; results keep the
        region's own layout (the host converts explicitly where it needs another)."""
        for position, ((value_name, leaf), wanted) in enumerate(zip(leaves, lowered.inputs)):
            if lowered.leaf_is_tensor[position]:
                given = str(leaf.handle.get_type())
                self.cc.plan(region, "in", position, value_name, given, wanted or given)
        for j, (ty, source) in enumerate(zip(lowered.outputs, lowered.output_sources)):
            if str(ty).startswith("tensor<"):
                self.cc.plan(region, "out", j, f"return[{j}]", source or str(ty), str(ty))

    def mismatch(self, gen, lhs, rhs, exc: ValueError) -> RegionError | None:
        """The error for a layout mismatch between ``lhs`` and ``rhs`` where one is a Triton
        region's result (``None`` otherwise): the layout the region returned, the one expected
        by the other operand, and where."""
        for mine, other in ((lhs, rhs), (rhs, lhs)):
            found = self._results.get(mine.handle.id()) if isinstance(mine, tl.tensor) else None
            if found is None or "Layout mismatch" not in str(exc):
                continue
            region, j = found
            returned, expected = mine.type.layout, getattr(other.type, "layout", None)
            return RegionError(
                region.function, str(region.call_site),
                f"its result return[{j}] comes back in {returned} (the layout Triton's passes gave it for the "
                f"host's inputs) and meets a value in {expected} at {CallSite.of(gen)}",
                f"convert explicitly where the layouts meet: gl.convert_layout(<result>, {expected}), or give "
                f"the region inputs in the layout you need")
        return None

    def region_of(self, value) -> Region | None:
        """The Triton region whose result ``value`` is, if it is one."""
        return self._results.get(value.handle.id(), (None, None))[0]

    def staged(self, value, buffer, plan: swizzle.Plan) -> None:
        """``hybrid.stage`` stored ``value`` into ``buffer``: where it is a Triton region's result,
        that boundary becomes a shared-memory handoff (one store of the region's own value)."""
        if value.handle.id() not in self._results:
            return
        region, j = self._results[value.handle.id()]
        planned = self.cc.planned
        k = next((k for k, p in enumerate(planned) if p.tag == BoundaryTag(region.index, "out", j).text), None)
        if k is None or planned[k].handoff == "shared":   # staged twice: the first buffer is the record's
            return
        ty = value.type
        planned[k] = dataclasses.replace(
            planned[k], to_layout=layout_of(str(buffer.handle.get_type())), handoff="shared",
            shared_bytes=tile_bytes(ty.shape, ty.element_ty.primitive_bitwidth),
            reason=f"stored once by hybrid.stage into {swizzle.describe(plan)}")

    # -- after code generation -----------------------------------------------------------------
    @property
    def pending(self) -> bool:
        return bool(self._pending)

    @property
    def pending_splices(self) -> tuple[PendingSplice, ...]:
        return tuple(self._pending)

    def splice_all(self, module) -> None:
        """Give every placeholder in ``module`` its region's lowered body."""
        for pending in self._pending:
            try:
                stitch.bind_ports(pending.lowered, list(pending.tensor_types), pending.region.index, self.cc.context)
                stitch.splice(module, pending.placeholder, pending.lowered.module, pending.lowered.function)
            except stitch.StitchError as exc:
                raise RegionError(pending.region.function, str(pending.region.call_site), str(exc)) from exc

    def close(self) -> None:
        self._pending.clear()
        self._spare.clear()


def splice_calls(state: Stitch, module) -> bool:
    """Every Triton region's lowered body moved into the placeholder the host calls. Whether
    there was one."""
    pending = splicing(state)
    state.compile.triton.splice_all(module)
    return pending


def splicing(state: Stitch) -> bool:
    """Whether a Triton region is waiting for its splice (a Gluon host without one is left as
    Gluon generated it)."""
    return state.compile.triton.pending


def _leaves(builder, args: list, names: list) -> list[tuple[str, object]]:
    """``arguments.leaves``, a ``PointerDescriptor`` as the values Triton lowers a descriptor to
    (``pointer_descriptors.lowered_leaves``): the region takes it as a descriptor there."""
    out = []
    for name, arg in zip(names, args):
        out.extend(pointer_descriptors.lowered_leaves(builder, name, arg) if pointer_descriptors.is_pointer_descriptor(arg)
                   else arguments.leaves([arg], [name]))
    return out


def _region_type(value, function: str, call_site: CallSite):
    """The Triton type a host value has inside a Triton region (layouts are the region's choice;
    a descriptor's shared layout is the host's)."""
    ty = value.type
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([_region_type(v, function, call_site) for v in value.values], ty.fields)
    if pointer_descriptors.is_pointer_descriptor(value):   # a descriptor from Triton code, without TMA
        return pointer_descriptors.LoweredDescriptorType(value)
    if isinstance(ty, tl.block_type):
        return tl.block_type(ty.element_ty, ty.shape)
    if isinstance(ty, (tl.dtype, tl.constexpr_type)):
        return ty
    if isinstance(ty, tma.tensor_descriptor_type):   # the host's descriptor, its shared layout kept
        if not compat.REGION_TAKES_HOST_DESCRIPTORS:   # (laid out by Triton: ``_check_descriptors``)
            return tl.tensor_descriptor_type(ty.block_type, ty.shape_type, ty.strides_type)
        return HostDescriptorType(ty, value.handle.get_type())
    raise RegionError(function, str(call_site), f"a value of type {ty} cannot be passed into a Triton region",
                      "Triton regions take tensors in registers, scalars, pointers and constexprs; "
                      "load shared or tensor memory into registers before the call")


def _check_descriptors(function: str, call_site: CallSite, leaves: list, lowered: LoweredRegion) -> None:
    """Each host descriptor the region takes, in the shared layout the host made it in: Triton's
    passes lay a descriptor out for its loads (on Triton 3.6 and 3.7 the region takes it without a
    layout to begin with), and one laid out otherwise is refused here, where the stitched kernel
    would not verify."""
    scalars = [(value_name, leaf) for (value_name, leaf), tensor in zip(leaves, lowered.leaf_is_tensor) if not tensor]
    descriptors = [(k, value_name, leaf) for k, (value_name, leaf) in enumerate(scalars)
                   if arguments.is_descriptor(leaf.type)]
    if not descriptors:   # (most regions: no walk of the lowered module)
        return
    entry = function_blocks(lowered.module, lowered.function)[0]
    for k, value_name, leaf in descriptors:
        host, region = str(leaf.handle.get_type()), str(entry.arg(k).get_type())
        if host != region:
            raise host_descriptor_into_region(function, str(call_site), value_name, host, region)


def _host_type(ty, results, builder):
    """The Gluon type of a region result: the Triton type plus the layout the lowering returned."""
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([_host_type(t, results, builder) for t in ty.types], ty.fields)
    handle = next(results)
    if isinstance(ty, tl.block_type):
        return gl.distributed_type(ty.element_ty, ty.shape, builder.get_gluon_layout_from_tensor(handle))
    return ty
