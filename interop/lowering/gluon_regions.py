"""Gluon regions: calls from Triton code to ``@gluon.jit`` functions, in one compile.

During the Triton host's code generation each call is built once as a throwaway probe (its
result types, and the ops the target must have) and becomes an opaque boundary
(``triton_host.emit_boundary``). Triton's own ``ttir`` and ``ttgir`` stages then lower the host;
``splice_calls`` (the first pass of ``interop.pipeline.TRITON_HOST``) builds each Gluon function
for the layouts Triton gave its operands (or the ones it declared, ``@hybrid.takes``) and splices
it into every copy of its boundary; the passes after it lay the host out again around the calls
(``host_relayout``), splice the Triton regions those Gluon functions call, and stitch and plan
the module.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator

from triton.experimental.gluon import language as gl

from . import arguments, caller_loads, interception, lower_gluon, pointer_descriptors, triton_host
from ..targets import arch
from ..ir import diagnostics, uses
from ..stitching import access_layouts, opaque, stitch
from .. import locations, validate
from ..boundaries import handoff, layout_views, swizzle
from ..instrumentation import timing
from ..boundary import TAG, BoundaryTag, is_shared, tile_bytes
from ..errors import ARCH_HINT, RegionError, TargetError, as_region_error, describe, raised_within
from ..region import CallSite
from ..triton import compat
from ..triton.bindings import gluon_ir
from ..triton.frontend import code_generator as _cg
from ..triton.language import core as tl
from ..stitching.state import Stitch

_HINT = ("the Gluon function is built with the layouts the Triton host gives its tensor arguments; "
         "convert them explicitly inside the Gluon function to the layouts it needs")
_TAKES_HINT = ("@hybrid.takes maps tensor parameters to a distributed layout or hybrid.shared(shared layout), "
               "either given directly or as the name of a constexpr parameter holding it")


class GluonRegions:
    """The Gluon regions of one compile (``CompileContext``)."""

    def __init__(self, compile_context):
        self.cc = compile_context
        self._calls: list[triton_host.GluonCall] = []
        self._probed: dict[str, tuple] = {}   # by specialization: (Gluon return type, probe module, entry layouts)
        self._operands: dict[str, list[int]] = {}   # a Gluon function being built -> its host operands' ids
        self.symbols: dict[str, int] = {}   # a Gluon function built -> its region's index
        self._taken = _Taken({}, {})        # the loads the host issues in a call's layout (``splice_all``)
        self._result_layouts: dict[str, dict[int, object]] = {}   # a Gluon function being built -> results' layouts

    # -- during code generation -------------------------------------------------------------
    def call(self, gen, fn, args, kwargs):
        """A Gluon call in Triton code: an opaque boundary now, the Gluon body after ttgir."""
        call_site = CallSite.of(gen)
        name = fn.__name__
        args = arguments.bind(fn, args, kwargs)
        wants = self._wants(fn, args, call_site)
        specialization = f"{name}({', '.join(str(arg.type) for arg in args)})"
        named_leaves = arguments.leaves(args, fn.arg_names)
        if specialization not in self._probed:
            ret_type, probe_module = self._probe(fn, args, wants, call_site)
            self._probed[specialization] = ret_type, probe_module, self._entry_layouts(
                fn, args, wants, call_site, probe_module, named_leaves), caller_loads.hoistable(
                probe_module, lower_gluon.PROBE)
        ret_type, probe_module, entry, hoists = self._probed[specialization]
        ret_type = lower_gluon.to_triton_type(ret_type)
        leaves = [leaf for _, leaf in named_leaves]
        result_types = arguments.leaf_types([ret_type]) if ret_type not in (None, tl.void) else []
        ir_types = [ty.to_ir(gen.builder) for ty in result_types]
        if compat.in_loop_carry_discovery(gen):
            results = [gen.builder.create_poison(ty) for ty in ir_types]
        else:
            region = self.cc.new_region(name, "gluon", call_site, specialization,
                                        shared_bytes=arch.allocated_shared_bytes(probe_module),
                                        lines=tuple(locations.lines_of(str(probe_module))))
            planned = any(want.planned for want in wants.values())
            loaded = caller_loads.issue(gen.semantic, leaves, hoists)   # (after the leaves: extra operands)
            self._calls.append(triton_host.GluonCall(
                region, fn, args, [leaf.type for leaf in leaves + loaded],
                [wants.get(leaf_name) for leaf_name, _ in named_leaves] + [None] * len(loaded),
                handoff.reads_async_proxy(probe_module),
                handoff.readers(probe_module, lower_gluon.PROBE, gluon_ir.GluonOpBuilder(self.cc.context)) if planned
                else {},
                [entry.get(leaf_name) if leaf_name not in wants else None for leaf_name, _ in named_leaves]
                + [None] * len(loaded), hoists))
            enable = opaque.enable_flag(gen.builder, opaque.GLUON_ENABLE)
            results = triton_host.emit_boundary(gen.builder, gen.module, self.cc.context, region.index,
                                                [v.handle for v in leaves + loaded], ir_types, enable)
        if ret_type in (None, tl.void):
            return None
        return next(_cg.unflatten_ir_values(results, [ret_type]))

    def _probe(self, fn, args: list, wants: dict, call_site: CallSite) -> tuple:
        """``fn`` built once with placeholder (or declared) layouts: its return type and module,
        checked to verify and to use only ops the target has. The Triton calls inside it are
        typed, not stitched (``interception.generating(..., probing=True)``)."""
        cc, name = self.cc, fn.__name__
        try:
            with interception.generating(cc, probing=True):
                ret_type, probe_module = lower_gluon.probe(fn, args, wants, context=cc.context, options=cc.options,
                                                           target=cc.target)
        except Exception as exc:
            missing = raised_within(exc, TargetError)
            if missing is not None:
                raise RegionError(name, str(call_site), missing.reason, missing.hint) from exc
            inner = raised_within(exc, RegionError)
            if inner is not None:   # a region inside this one (nested regions): its own error names it
                raise RegionError(inner.function, inner.call_site, inner.reason, inner.hint) from None
            raise RegionError(name, str(call_site), describe(exc), _HINT) from exc
        _check_tma_copies(name, call_site, probe_module)
        errors = diagnostics.verify(probe_module)
        if errors:
            raise RegionError(name, str(call_site), f"the Gluon function does not verify for "
                              f"{arch.describe(cc.target)} ({cc.options.warp_size}-thread warps, num_warps="
                              f"{cc.options.num_warps}):\n{errors}", _verify_hint(errors))
        misplaced = arch.misplaced_ops(probe_module, cc.target)
        if misplaced:
            raise RegionError(name, str(call_site), arch.describe_misplaced(misplaced, cc.target), ARCH_HINT)
        return ret_type, probe_module

    def _entry_layouts(self, fn, args: list, wants: dict, call_site: CallSite, probe_module,
                       named_leaves: list) -> dict:
        """``handoff.entry_layouts`` of the probe; a leaf whose placeholder layout the code also
        has is told by one more probe, taking it in the placeholder as a linear layout (a layout
        no code has by chance): the code read the argument's layout where that one shows too."""
        builder = gluon_ir.GluonOpBuilder(self.cc.context)
        names = [name for name, _ in named_leaves]
        entry, unsure = handoff.entry_layouts(probe_module, lower_gluon.PROBE, names, builder)
        if not unsure:
            return entry
        leaves = dict(named_leaves)
        distinct = {name: handoff.Want(lower_gluon.linear_placeholder(leaves[name].type, self.cc.options, builder),
                                       False) for name in unsure}
        try:
            _, second = self._probe(fn, args, {**wants, **distinct}, call_site)
        except Exception:   # noqa: BLE001 - an op refusing a linear layout: the leaves stay converted
            return entry
        told, _ = handoff.entry_layouts(second, lower_gluon.PROBE, names, builder)
        return {**entry, **{name: told[name] for name in unsure if name in told}}

    def _wants(self, fn, args: list, call_site: CallSite) -> dict:
        """The call's ``@hybrid.takes`` declarations, checked against the arguments and the target."""
        try:
            wants = handoff.wants(fn, dict(zip(fn.arg_names, args)))
        except ValueError as exc:
            raise RegionError(fn.__name__, str(call_site), str(exc), _TAKES_HINT) from exc
        options = self.cc.options
        for param, want in wants.items():
            problem = None if want.in_shared else validate.layout_problem(
                want.layout, options.warp_size, options.num_warps, arch.describe(self.cc.target))
            if problem:
                raise RegionError(fn.__name__, str(call_site), f"the layout declared for '{param}': {problem}")
        return wants

    # -- after the host's ttgir ------------------------------------------------------------------
    def splice_all(self, module) -> None:
        """Build each Gluon call for the layouts its operands got, splice it into every copy of its
        boundary, record its boundaries, and enable the boundaries. A call in IR that a loop's dry
        visit discarded (Triton 3.6) has no copy: its region is dropped."""
        gluon_builder = gluon_ir.GluonOpBuilder(self.cc.context)
        calls, self._calls = self._calls, []
        dropped = set()
        found = {call.region.index: triton_host.find_ports(module, call.region.index) for call in calls}
        self._taken = _taken_in_entry_layouts(calls, found, module, gluon_builder)
        returned = _returned_in_entry_layouts(calls, found, module)
        asked = _returning.get()
        for call in calls:   # where no call it feeds takes it in an entry layout, the layout asked for
            for j, (layout, shape, dtype) in asked.get(call.fn.__name__, {}).items():
                returned.setdefault(call.region.index, {}).setdefault(j, layout_views.gluon_layout_of(
                    layout, shape, dtype, self.cc.options.num_warps, self.cc.options.warp_size, gluon_builder,
                    self.cc.context))
        for call in calls:
            copies = triton_host.find_ports(module, call.region.index)
            triton_host.read_paddings(module, gluon_builder, call, copies)
            if not copies:
                dropped.add(call.region.index)
                continue
            built: dict[tuple, tuple] = {}   # per set of operand layouts: (Gluon function, wants, plans)
            for ports in copies:
                if ports.operand_types not in built:
                    built[ports.operand_types] = self._build(call, ports, module, gluon_builder, len(built),
                                                             returned.get(call.region.index, {}))
                function, wants, plans = built[ports.operand_types]
                produced = triton_host.splice(call, function, wants, ports, self.cc.context,
                                              profiled=self.cc.scopes.around_region(module, call.region,
                                                                                    ports.last_sink))
                triton_host.release_descriptor_sinks(module, ports, self.cc.context)
            self._plan_boundaries(call, wants, plans, copies[-1], produced)
        stitch.set_flags(module, opaque.GLUON_ENABLE, True, self.cc.context)
        self.cc.regions = [r for r in self.cc.regions if r.index not in dropped]

    @timing.timed("Gluon region builds")
    def _build(self, call: triton_host.GluonCall, ports: triton_host.Ports, module, gluon_builder,
               variant: int, result_layouts: dict) -> tuple:
        """``call``'s Gluon function built for the layouts its operands got in ``ports``, with the
        shared layouts of planned handoffs chosen for them, and an operand the function converts
        first taken in the layout converted to where the host can load it there instead
        (``access_layouts``), and a tile another Gluon call returned taken in the layout it was
        returned in; a function that only returns a Triton function's results has the region load
        each in ``result_layouts`` (``_returned_in_entry_layouts``). Returns (function, wants, plans)."""
        wants, plans = list(call.wants), {}
        producers = None
        for k, (want, value, ty) in enumerate(zip(call.wants, ports.operands, call.leaf_types)):
            if want is not None and want.planned:
                plans[k] = swizzle.plan(gluon_builder, gluon_builder.get_gluon_layout_from_tensor(value),
                                        call.readers.get(k, []), list(ty.shape), ty.element_ty.primitive_bitwidth)
                wants[k] = handoff.Want(plans[k].layout, True, planned=True)
            elif want is None and (call.region.index, value.id()) in self._taken.entries:
                wants[k] = call.entry_wants[k]   # the host will load the tile in it: the conversion goes
            elif want is None and value.id() in self._taken.loads:   # the host will load it in that layout
                wants[k] = self._taken.loads[value.id()]
            elif want is None and isinstance(ty, tl.block_type):
                producers = producers or (uses.producers(module), _yielded_by_then(module))
                produced = _gluon_result(*producers, value)
                if produced is not None:   # as a Gluon caller would pass it: no conversion between the two
                    wants[k] = handoff.Want(gluon_builder.get_gluon_layout_from_tensor(produced), False)
        leaf_types = [want.gluon_type(t) if want else
                      gl.distributed_type(t.element_ty, t.shape, gluon_builder.get_gluon_layout_from_tensor(v))
                      if isinstance(t, tl.block_type) else
                      self._descriptor_type(t, v, gluon_builder, ports.paddings.get(k))
                      if arguments.is_descriptor(t) else t
                      for k, (t, v, want) in enumerate(zip(call.leaf_types, ports.operands, wants))]
        arg_types = arguments.with_leaf_types([a.type for a in call.args], iter(leaf_types))
        name = call.region.symbol + (f"_v{variant}" if variant else "")
        cc = self.cc
        leaves = len(ports.operands) - len(call.hoists)
        self._operands[name] = [value.id() for value in triton_host.with_paddings(ports, ports.operands[:leaves])]
        if result_layouts and _only_returns_a_call(call.fn):
            self._result_layouts[name] = result_layouts
        self.symbols[name] = call.region.index
        with as_region_error(call.region.function, call.region.call_site, _HINT):
            function, _ = lower_gluon.build_gluon_function(call.fn, call.args, arg_types, module=module,
                                                           context=cc.context, options=cc.options, target=cc.target,
                                                           name=name)
        if any(arguments.is_descriptor(t) for t in call.leaf_types):   # in the layouts Triton's passes gave them
            _check_tma_copies(call.region.function, call.region.call_site, module)
        loaded = caller_loads.take(module, function, gluon_builder, [h.index for h in call.hoists])
        for k in range(leaves, leaves + len(loaded)):   # the host's load, in the layout of the one it replaced
            wants[k] = handoff.Want(gluon_builder.get_gluon_layout_from_tensor(function.args(k)), False)
        return function, wants, plans

    def _descriptor_type(self, ty, value, builder, padding):
        """Gluon's descriptor type for a Triton descriptor ``value`` of type ``ty``, in the shared
        layout Triton's passes gave it (none given: the default one, as the probe took it); on a
        target without TMA, the ``PointerDescriptor`` of the pointer, shape and strides Triton
        lowered it to, its ``padding`` option a constexpr where the host's is a constant
        (``triton_host.read_paddings``)."""
        if self.cc.target not in arch.SM90_UP:
            return pointer_descriptors.view_type(ty, padding if isinstance(padding, bool) else None)
        shape, dtype, layout = triton_host.descriptor_layout(str(value.get_type()))
        if layout is None:
            return lower_gluon.placeholder_type(ty, self.cc.options)
        options = self.cc.options
        return lower_gluon.gluon_descriptor_type(ty, layout_views.gluon_shared_layout_of(
            layout, shape, dtype, options.num_warps, options.warp_size, builder, self.cc.context))

    def operands_of(self, gen) -> dict[int, int]:
        """While ``gen`` builds a Gluon region of this Triton host: its arguments' value ids ->
        the host operands they receive (a Triton region it calls takes the host's axis facts
        and kernel-argument specialization through them); otherwise empty."""
        operands = self._operands.get(getattr(gen, "function_name", None))
        if operands is None or gen.fn is None or gen.fn.get_num_args() != len(operands):
            return {}
        return {gen.fn.args(i).id(): operand for i, operand in enumerate(operands)}

    def result_layouts_of(self, gen) -> dict[int, object]:
        """While ``gen`` builds a Gluon function of this Triton host that only returns a Triton
        function's results: per result index, the layout a later Gluon call takes that result in
        (its entry layout), for the Triton region to load it there; otherwise empty."""
        return self._result_layouts.get(getattr(gen, "function_name", None), {})

    def _plan_boundaries(self, call: triton_host.GluonCall, wants: list, plans: dict, ports: triton_host.Ports,
                         produced: list[str]) -> None:
        """Inputs go from the host's layout to the declared one (``@hybrid.takes``; the host's own
        when none is declared) or into a shared buffer; results convert (or, returned in shared
        memory, are loaded) to the layouts the host wants."""
        builder = gluon_ir.GluonOpBuilder(self.cc.context)
        names = [name for name, _ in arguments.leaves(call.args, call.fn.arg_names)]
        names += [names[h.pointer] + caller_loads.HOISTED for h in call.hoists]
        fenced = call.reads_async_proxy
        plan = self.cc.plan
        for k, (operand, want, ty) in enumerate(zip(ports.operands, wants, call.leaf_types)):
            given = str(operand.get_type())
            if not given.startswith("tensor<"):
                continue
            wanted = str(want.gluon_type(ty).to_ir(builder)) if want else given
            if want and want.in_shared:
                nbytes = tile_bytes(ty.shape, ty.element_ty.primitive_bitwidth)
                how = "the declared shared layout" if k not in plans else swizzle.describe(plans[k])
                plan(call.region, "in", k, names[k], given, wanted, handoff="shared", shared_bytes=nbytes,
                     fences=int(fenced), reason=f"stored once into {how}"
                     + (", then one async-proxy fence for the region's wgmma/tcgen05/TMA" if fenced else ""))
                fenced = False   # one fence serves every buffer stored before it
            else:
                plan(call.region, "in", k, names[k], given, wanted)
        for j, own in enumerate(produced):
            wanted = next((str(v.get_type()) for k, v in ports.outputs if k == j), own)
            if is_shared(own):
                plan(call.region, "out", j, f"return[{j}]", own, wanted, handoff="shared",
                     reason="loaded from the shared buffer the region returned")
            elif own.startswith("tensor<"):   # the host's first layout for it (a conversion per further one)
                plan(call.region, "out", j, f"return[{j}]", own, wanted)


def splice_calls(state: Stitch, module) -> None:
    """After the Triton host's ttgir: each Gluon function built for the layouts Triton gave its
    operands and spliced into every copy of its boundary."""
    state.compile.gluon.splice_all(module)


def relocate_scopes(state: Stitch, module) -> bool:
    """The pipelined loops timed whole found again after the host's relayout (``Scopes.relocate``;
    the module is read)."""
    state.compile.scopes.relocate(module)
    return False


def _check_tma_copies(function: str, call_site, module) -> None:
    """A TMA copy between a descriptor and a buffer of another shared layout, refused alike on every
    Triton (3.6 would build it, the bytes swizzled wrong)."""
    mismatch = triton_host.mismatched_tma_copy(module)
    if mismatch is not None:
        raise RegionError(function, str(call_site), f"a TMA copy through a tensor descriptor in {mismatch[0]} uses "
                          f"a shared buffer in {mismatch[1]}: the layouts must be the same",
                          "allocate the buffers a descriptor's copies use in desc.layout (a descriptor from Triton "
                          "code comes in the shared layout Triton's passes gave it)")


def _verify_hint(errors: str) -> str:
    if "threads per warp" in errors or "warps" in errors:
        return ("a layout written in a Gluon region must match the target's warp size and the kernel's num_warps; "
                "pass target-specific layouts as constexprs")
    return "fix the Gluon function at the file:line above, or the values passed to it at the call site"


@dataclass(frozen=True)
class _Taken:
    """The loads the host will issue in a call's entry layout (``handoff.entry_layouts``,
    ``access_layouts``), decided once before any call is built (so on the host's code alone, as
    ``host_relayout`` later sees it): ``entries``, (region index, operand value id) of each call
    whose entry layout is taken; ``loads``, each such load's value id -> that layout's ``Want``,
    in which every other call the load feeds takes it too, as the host will have it."""
    entries: frozenset
    loads: dict


def _taken_in_entry_layouts(calls: list, found: dict, module, builder) -> _Taken:
    """``found``: each call's copies of its boundary (``triton_host.find_ports``), by region index."""
    wanted = [(call.region.index, value, entry) for call in calls
              for ports in found[call.region.index]
              for want, entry, value in zip(call.wants, call.entry_wants, ports.operands)
              if want is None and entry is not None]
    taken = [w for w, ok in zip(wanted, access_layouts.issuable(module, builder, [(v, e.layout) for _, v, e in wanted]))
             if ok]
    return _Taken(frozenset((index, value.id()) for index, value, _ in taken),
                  {value.id(): entry for _, value, entry in taken})


#: Per Gluon function name, result index -> (layout text, shape, dtype) its Triton region is asked to
#: load that result in (``returning``).
_returning: contextvars.ContextVar[dict] = contextvars.ContextVar("hybrid_returning", default={})


@contextlib.contextmanager
def returning(function: str, layouts: dict[int, tuple]) -> Iterator[None]:
    """Compiles in this block build the Gluon function named ``function``, where it only returns a
    Triton function's results, with its region loading each result ``j`` of ``layouts`` in the
    layout given (ttgir text, with the tile's shape and dtype): a port's probe, built again for the
    layouts the kernel without the port has those results in (``hybrid.port.from_ttgir.capture``)."""
    token = _returning.set({**_returning.get(), function: layouts})
    try:
        yield
    finally:
        _returning.reset(token)


def _returned_in_entry_layouts(calls: list, found: dict, module) -> dict[int, dict[int, object]]:
    """Per call (region index), the results that reach another call as an operand that call
    takes in its entry layout (``handoff.entry_layouts``, nothing declared): result index -> that
    layout. Read off the opaque boundaries (``found``: each call's copies of its boundary; a
    result's producer, or its conversion, is the operand)."""
    producers: dict[int, tuple[int, int]] = {}   # a producer's value id -> (region index, result index)
    for call in calls:
        for ports in found[call.region.index]:
            producers.update((value.id(), (call.region.index, j)) for j, value in ports.outputs)
    returned: dict[int, dict[int, object]] = {}
    defining = uses.producers(module) if producers else {}
    for call in calls:
        for ports in found[call.region.index]:
            for want, entry, value in zip(call.wants, call.entry_wants, ports.operands):
                source = defining.get(value.id())
                origin = producers.get(value.id())
                if origin is None and source is not None and source.get_name() == "ttg.convert_layout":
                    origin = producers.get(source.get_operand(0).id())
                if want is None and entry is not None and origin is not None:
                    returned.setdefault(origin[0], {})[origin[1]] = entry.layout
    return returned


def _yielded_by_then(module) -> dict[int, object]:
    """Per result (value id) of each ``scf.if`` in ``module``, the value its then branch yields."""
    owner = uses.owners(module)
    found: dict[int, object] = {}

    def visit(op) -> None:
        if op.get_name() != "scf.yield":
            return
        region = op.get_block().get_parent()
        holder = owner.get(region.id())
        if holder is not None and holder.get_name() == "scf.if" and holder.get_region(0).id() == region.id():
            found.update((holder.get_result(i).id(), op.get_operand(i)) for i in range(op.get_num_operands()))

    module.walk(visit)
    return found


def _only_returns_a_call(fn) -> bool:
    """Whether the body of ``fn`` (a ``@gluon.jit`` function) is one ``return f(a, b, ...)`` of
    its parameters (a docstring aside): its results are the callee's, as a port probe's are."""
    body = fn.parse().body[0].body
    body = body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return False
    call = body[0].value
    return all(isinstance(arg, ast.Name) for arg in call.args) and all(
        isinstance(keyword.value, ast.Name) for keyword in call.keywords)


def _gluon_result(producers: dict, yielded: dict, value):
    """The result of an earlier Gluon call that ``value`` is the boundary's conversion of (the
    host took it in the layout Triton chose while both calls were opaque), or None;
    ``producers``: ``uses.producers`` of the module; ``yielded``: ``_yielded_by_then``, through
    which an earlier call's boundary ``scf.if`` passes its result on (two calls in a row)."""
    while value.id() in yielded:
        value = yielded[value.id()]
    conversion = producers.get(value.id())
    if conversion is None or conversion.get_name() != "ttg.convert_layout" or not conversion.get_str_attr(TAG) \
            or BoundaryTag.parse(conversion.get_str_attr(TAG)).direction != "out":
        return None
    source = conversion.get_operand(0)
    call = producers.get(source.id())
    return source if call is not None and call.get_name() == "tt.call" else None
