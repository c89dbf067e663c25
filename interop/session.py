"""One compile of a mixed kernel: intercept cross-language calls, lower, stitch, record.

``HybridSession.code_generator()`` returns a ``CodeGenerator`` subclass bound to the session;
``compat.code_generator_class`` installs it for the duration of the host's code generation so
that calls from any Gluon function of the kernel (however nested) to a ``@triton.jit``
function become Triton regions, and calls from Triton code to a ``@gluon.jit`` function become
Gluon regions (``triton_host.py``). Calls within one language are left to upstream unchanged.
"""
from __future__ import annotations

from triton._C.libtriton import gluon_ir
from triton.compiler import code_generator as _cg
from triton.experimental.gluon import language as gl
from triton.language import core as tl

from . import (arch, arguments, compat, diagnostics, guarded_builder, handoff, instrument, locations, lower_gluon,
               lowering_cache, movement, opaque, planner, stitch, swizzle, timing, triton_host, validate)
from . import boundary as bd
from .errors import ARCH_HINT, RegionError, TargetError, raised_within
from .lower_triton import lower_triton_function
from .region import CallSite, Region
from .scratch import ScratchProbe

_GLUON_HINT = ("the Gluon function is built with the layouts the Triton host gives its tensor arguments; "
               "convert them explicitly inside the Gluon function to the layouts it needs")
_REGION_HINT = ("the Triton function is lowered on its own for the call site's argument types; "
                "fix it or the arguments passed at the call site")
_TAKES_HINT = ("@hybrid.takes maps tensor parameters to a distributed layout or hybrid.shared(shared layout), "
               "either given directly or as the name of a constexpr parameter holding it")


class HybridCodeGenerator(_cg.CodeGenerator):
    session: "HybridSession"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.is_gluon:
            guarded_builder.guard(self.builder)
            self._name_regions_in_mismatches()

    def _name_regions_in_mismatches(self) -> None:
        """A layout mismatch in the host's code that involves a Triton region's result names the
        region, its call site, both layouts and the conversion to write (``mismatch``)."""
        broadcast = self.semantic.broadcast_impl_value

        def broadcast_impl_value(lhs, rhs):
            try:
                return broadcast(lhs, rhs)
            except ValueError as exc:
                error = self.session.mismatch(self, lhs, rhs, exc)
                if error is None:
                    raise
                raise error from exc

        self.semantic.broadcast_impl_value = broadcast_impl_value

    def call_Function(self, node, fn, args, kws):
        """A Gluon builtin the target lacks is a ``TargetError`` at its call, before any IR (``interop.arch``)."""
        arch.check_builtin(fn, self.session.target,
                           lambda: f"{self.file_name}:{self.begin_line + node.lineno} in {self.jit_fn.__name__}")
        return super().call_Function(node, fn, args, kws)

    def call_JitFunction(self, fn, args, kwargs, caller_context=None):
        if _is_library(fn):   # triton.language's own helpers (reduce combiners, ...) serve both languages
            return super().call_JitFunction(fn, args, kwargs, caller_context=caller_context)
        if self.is_gluon and not fn.is_gluon():
            return self.session.call_triton_region(self, fn, args, kwargs)
        if not self.is_gluon and fn.is_gluon():
            return self.session.call_gluon_region(self, fn, args, kwargs)
        return super().call_JitFunction(fn, args, kwargs, caller_context=caller_context)


def _is_library(fn) -> bool:
    return getattr(fn.fn, "__module__", "").startswith("triton.")


class HybridSession:
    """Regions, their lowered bodies and boundary records of one compile."""

    def __init__(self, context, options, target, kernel_arg_attrs: list | None = None):
        self.context = context
        self.options = options
        self.target = target
        #: per runtime argument of the host kernel, its specialization attributes (tt.divisibility)
        self.kernel_arg_attrs = kernel_arg_attrs or []
        self._kernel_args: dict | None = None
        self.regions: list[Region] = []
        self.boundaries: list[bd.Boundary] = []
        self._pending: list[tuple] = []   # (region, lowered, placeholder, host tensor types)
        self._spare: dict[str, object] = {}   # lowered during a loop's dry visit, for the real visit
        self._planned: list[dict] = []                            # boundary fields known at the call site
        self._gluon_calls: list[triton_host.GluonCall] = []
        self._probed: dict[str, tuple] = {}   # by specialization: (Gluon return type, probe module)
        self._probing = False                 # building a Gluon function only for its result types
        self._timed_loops: dict[int, list[Region]] = {}   # pipelined loop body -> regions timed around it
        self._region_results: dict[int, tuple[Region, int]] = {}   # a Triton region's result value -> (region, j)

    def code_generator(self) -> type:
        return type("HybridCodeGenerator", (HybridCodeGenerator,), {"session": self})

    # -- during code generation -------------------------------------------------------------
    def call_triton_region(self, gen, fn, args, kwargs):
        call_site = CallSite(gen.file_name, gen.begin_line + gen.cur_node.lineno)
        name = fn.__name__
        args = arguments.bind(fn, args, kwargs)
        arg_types = [_region_type(arg.type, name, call_site) for arg in args]
        leaves = arguments.leaves(args, fn.arg_names)
        host_types = [leaf.handle.get_type() for _, leaf in leaves if isinstance(leaf.type, tl.block_type)]
        specialization = f"{name}({', '.join(str(t) for t in arg_types)})"
        if host_types:   # the region is lowered in the host's layouts: they belong to its specialization
            specialization += f" in {', '.join(str(t) for t in host_types)}"
        scalar_attrs = self._scalar_attrs(gen, leaves)
        if any(scalar_attrs):
            specialization += f" {scalar_attrs}"
        dry = compat.in_loop_carry_discovery(gen) or self._probing
        lowered = self._spare.get(specialization) if dry else self._spare.pop(specialization, None)
        if lowered is None:
            lowered = self._lower(fn, args, arg_types, host_types, name, call_site, scalar_attrs)
            if dry:
                self._spare[specialization] = lowered
        if dry:  # this IR is discarded: results of the right types suffice, and no call is left behind
            results = [gen.builder.create_poison(ty) for ty in lowered.outputs]
        else:
            results = self._emit_call(gen, fn, specialization, call_site, lowered, args)
        if lowered.ret_type is None or lowered.ret_type == tl.void:
            return None
        host_type = _host_type(lowered.ret_type, iter(results), gen.builder)
        return next(_cg.unflatten_ir_values(results, [host_type]))

    def _emit_call(self, gen, fn, specialization: str, call_site: CallSite, lowered, args) -> list:
        """Declare the placeholder and call it with the scalars, then the tensors.

        The results are opaque placeholders for now (``opaque.result_placeholder``):
        ``stitch.connect_results`` replaces them with the region's values once it is inlined.
        """
        index, name = len(self.regions), fn.__name__
        region = Region(index=index, function=name, language="triton", call_site=call_site,
                        symbol=f"__hybrid_r{index}_{name}", specialization=specialization,
                        shared_bytes=arch.allocated_shared_bytes(lowered.module),
                        lines=tuple(locations.lines_of(str(lowered.module))))
        self.regions.append(region)
        leaves = arguments.leaves(args, fn.arg_names)
        scalars = [leaf.handle for (_, leaf), tensor in zip(leaves, lowered.leaf_is_tensor) if not tensor]
        tensors = [leaf.handle for (_, leaf), tensor in zip(leaves, lowered.leaf_is_tensor) if tensor]
        handles = scalars + tensors
        builder = _cg.ir.builder(self.context)  # a fresh builder creates the function detached
        signature = builder.get_function_ty([h.get_type() for h in handles], [])
        placeholder = builder.get_or_insert_function(gen.module, region.symbol, signature, "private", False)
        gen.module.push_back(placeholder)
        self._pending.append((region, lowered, placeholder, [h.get_type() for h in tensors]))
        with instrument.around(gen.builder, region, instrument.enabled()):
            gen.builder.call(placeholder, handles)
        results = [opaque.result_placeholder(gen.builder, ty, stitch.result_key(index, j), stitch.RESULT)
                   for j, ty in enumerate(lowered.outputs)]
        self._region_results.update((value.id(), (region, j)) for j, value in enumerate(results))
        self._plan_boundaries(region, lowered, leaves)
        return results

    def call_gluon_region(self, gen, fn, args, kwargs):
        """A Gluon call in Triton code: an opaque boundary now, the Gluon body after ttgir."""
        call_site = CallSite(gen.file_name, gen.begin_line + gen.cur_node.lineno)
        name = fn.__name__
        args = arguments.bind(fn, args, kwargs)
        wants = self._wants(fn, args, call_site)
        arg_types = [arg.type for arg in args]
        specialization = f"{name}({', '.join(str(t) for t in arg_types)})"
        if specialization not in self._probed:
            self._probing = True   # Triton calls inside it are typed, not stitched (as in a dry visit)
            try:
                ret_type, probe_module = lower_gluon.probe(fn, args, wants, context=self.context,
                                                           options=self.options, target=self.target)
            except Exception as exc:
                missing = raised_within(exc, TargetError)
                if missing is not None:
                    raise RegionError(name, str(call_site), missing.reason, missing.hint) from exc
                raise RegionError(name, str(call_site), _describe(exc), _GLUON_HINT) from exc
            finally:
                self._probing = False
            errors = diagnostics.verify(probe_module)
            if errors:
                raise RegionError(name, str(call_site), f"the Gluon function does not verify for "
                                  f"{arch.describe(self.target)} ({self.options.warp_size}-thread warps, num_warps="
                                  f"{self.options.num_warps}):\n{errors}", _verify_hint(errors))
            _check_arch(probe_module, self.target, name, str(call_site))
            self._probed[specialization] = (ret_type, probe_module)
        ret_type = lower_gluon.to_triton_type(self._probed[specialization][0])
        named_leaves = arguments.leaves(args, fn.arg_names)
        leaves = [leaf for _, leaf in named_leaves]
        result_types = arguments.leaf_types([ret_type]) if ret_type not in (None, tl.void) else []
        ir_types = [ty.to_ir(gen.builder) for ty in result_types]
        if compat.in_loop_carry_discovery(gen):
            results = [gen.builder.create_poison(ty) for ty in ir_types]
        else:
            index = len(self.regions)
            region = Region(index=index, function=name, language="gluon", call_site=call_site,
                            symbol=f"__hybrid_r{index}_{name}", specialization=specialization,
                            shared_bytes=arch.allocated_shared_bytes(self._probed[specialization][1]),
                            lines=tuple(locations.lines_of(str(self._probed[specialization][1]))))
            self.regions.append(region)
            probe_module = self._probed[specialization][1]
            planned = any(want.planned for want in wants.values())
            self._gluon_calls.append(triton_host.GluonCall(
                region, fn, args, [leaf.type for leaf in leaves],
                [wants.get(leaf_name) for leaf_name, _ in named_leaves],
                handoff.reads_async_proxy(probe_module),
                handoff.readers(probe_module, lower_gluon.PROBE, gluon_ir.GluonOpBuilder(self.context)) if planned
                else {}))
            enable = opaque.enable_flag(gen.builder, opaque.GLUON_ENABLE)
            results = triton_host.emit_boundary(gen.builder, index, [leaf.handle for leaf in leaves], ir_types,
                                                enable)
        if ret_type in (None, tl.void):
            return None
        return next(_cg.unflatten_ir_values(results, [ret_type]))

    def mismatch(self, gen, lhs, rhs, exc: ValueError) -> RegionError | None:
        """The error for a layout mismatch between ``lhs`` and ``rhs`` where one is a Triton
        region's result (``None`` otherwise): the layout the region returned, the one expected
        by the other operand, and where."""
        for mine, other in ((lhs, rhs), (rhs, lhs)):
            found = self._region_results.get(mine.handle.id()) if isinstance(mine, tl.tensor) else None
            if found is None or "Layout mismatch" not in str(exc):
                continue
            region, j = found
            site = CallSite(gen.file_name, gen.begin_line + gen.cur_node.lineno)
            returned, expected = mine.type.layout, getattr(other.type, "layout", None)
            return RegionError(
                region.function, str(region.call_site),
                f"its result return[{j}] comes back in {returned} (the layout Triton's passes gave it for the "
                f"host's inputs) and meets a value in {expected} at {site}",
                f"convert explicitly where the layouts meet: gl.convert_layout(<result>, {expected}), or give "
                f"the region inputs in the layout you need")
        return None

    def region_of(self, value) -> Region | None:
        """The Triton region whose result ``value`` is, if it is one."""
        return self._region_results.get(value.handle.id(), (None, None))[0]

    def staged(self, value, buffer, plan: swizzle.Plan) -> None:
        """``hybrid.stage`` stored ``value`` into ``buffer``: where it is a Triton region's result,
        that boundary becomes a shared-memory handoff (one store of the region's own value)."""
        if value.handle.id() not in self._region_results:
            return
        region, j = self._region_results[value.handle.id()]
        key = (region.index, "out", j)
        planned = next((p for p in self._planned if (p["region"], p["direction"], p["index"]) == key), None)
        if planned is None or planned.get("handoff") == "shared":   # staged twice: the first buffer is the record's
            return
        ty = value.type
        planned.update(to_layout=bd.layout_of(str(buffer.handle.get_type())), handoff="shared",
                       shared_bytes=movement.tile_bytes(ty.shape, ty.element_ty.primitive_bitwidth),
                       reason=f"stored once by hybrid.stage into {swizzle.describe(plan)}")

    def _wants(self, fn, args: list, call_site: CallSite) -> dict:
        """The call's ``@hybrid.takes`` declarations, checked against the arguments and the target."""
        try:
            wants = handoff.wants(fn, dict(zip(fn.arg_names, args)))
        except ValueError as exc:
            raise RegionError(fn.__name__, str(call_site), str(exc), _TAKES_HINT) from exc
        for param, want in wants.items():
            problem = None if want.in_shared else validate.layout_problem(
                want.layout, self.options.warp_size, self.options.num_warps, arch.describe(self.target))
            if problem:
                raise RegionError(fn.__name__, str(call_site), f"the layout declared for '{param}': {problem}")
        return wants

    def _scalar_attrs(self, gen, leaves: list) -> list[list]:
        """Per scalar leaf, the specialization attributes of the host kernel argument it is
        (``[]`` for any other value, and while probing: a probe's module has no kernel)."""
        if self._probing:
            return [[] for _, leaf in leaves if not isinstance(leaf.type, tl.block_type)]
        if self.kernel_arg_attrs and self._kernel_args is None:
            kernel = gen.module.get_function(gen.module.get_entry_func_name())
            self._kernel_args = {kernel.args(i).id(): attrs for i, attrs in enumerate(self.kernel_arg_attrs)}
        known = self._kernel_args or {}
        return [known.get(leaf.handle.id(), []) for _, leaf in leaves if not isinstance(leaf.type, tl.block_type)]

    @timing.timed("Triton region lowering")
    def _lower(self, fn, args, arg_types, host_types: list, name: str, call_site: CallSite, scalar_attrs: list):
        printed = [str(ty) for ty in host_types]
        try:
            return lowering_cache.lowered(
                lowering_cache.key(fn, args, arg_types, printed, scalar_attrs, self.options, self.target),
                self.context, printed, lambda: lower_triton_function(fn, args, arg_types, host_types,
                                                                     context=self.context, options=self.options,
                                                                     target=self.target, scalar_attrs=scalar_attrs))
        except RegionError:
            raise
        except Exception as exc:  # Triton's own CompilationError, pass-manager failures, ...
            raise RegionError(name, str(call_site), _describe(exc), _REGION_HINT) from exc

    def _plan_boundaries(self, region: Region, lowered, leaves: list) -> None:
        """Inputs go from the host's layout to the one the region wants; results keep the
        region's own layout (the host converts explicitly where it needs another)."""
        for position, ((value_name, leaf), wanted) in enumerate(zip(leaves, lowered.inputs)):
            if lowered.leaf_is_tensor[position]:
                given = str(leaf.handle.get_type())
                self._plan(region, "in", position, value_name, given, wanted or given)
        for j, (ty, source) in enumerate(zip(lowered.outputs, lowered.output_sources)):
            if str(ty).startswith("tensor<"):
                self._plan(region, "out", j, f"return[{j}]", source or str(ty), str(ty))

    def _plan(self, region: Region, direction: str, index: int, value: str, given: str, expected: str,
              **shared) -> None:
        """One boundary record to complete after stitching; ``shared`` holds a shared-memory
        handoff's ``Boundary`` fields (and its ``reason``)."""
        shape, dtype = bd.shape_and_dtype(expected)
        self._planned.append(dict(region=region.index, function=region.function, direction=direction, index=index,
                                  value=value, shape=shape, dtype=dtype, from_layout=bd.layout_of(given),
                                  to_layout=bd.layout_of(expected), agree=given == expected, **shared))

    # -- after code generation -----------------------------------------------------------------
    def finish(self, module) -> None:
        """Splice every Triton region into ``module``, inline, fold boundaries, verify, record."""
        self._keep_called(module)
        if self._pending:
            self._splice_triton_regions(module)
            self._stitch(module)

    def finish_triton_host(self, module) -> None:
        """After the Triton host's ttgir: build each Gluon call for the layouts its operands got,
        splice it in, stitch any Triton regions those Gluon functions call, inline, verify."""
        gluon_builder = gluon_ir.GluonOpBuilder(self.context)
        calls, self._gluon_calls = self._gluon_calls, []
        kept = []
        for call in calls:
            copies = triton_host.find_ports(module, call.region.index)
            if not copies:   # the call sat in IR a loop's dry visit discarded (Triton 3.6)
                continue
            kept.append(call.region.index)
            built: dict[tuple, tuple] = {}   # per set of operand layouts: (Gluon function, wants, plans)
            for ports in copies:
                if ports.operand_types not in built:
                    built[ports.operand_types] = self._build_gluon_call(call, ports, module, gluon_builder,
                                                                        len(built))
                function, wants, plans = built[ports.operand_types]
                produced = triton_host.splice(call, function, wants, ports, self.context,
                                              profiled=self._profile_here(module, call.region, ports))
            self._plan_gluon_boundaries(call, wants, plans, copies[-1], produced)
        stitch.set_flags(module, opaque.GLUON_ENABLE, True, self.context)
        self.regions = [r for r in self.regions if r.language != "gluon" or r.index in kept]
        self._keep_called(module)
        self._splice_triton_regions(module)
        self._stitch(module)

    def _profile_here(self, module, region: Region, ports) -> bool:
        """Whether this copy of a Gluon call gets its own Proton scope; in a pipelined loop timed
        in total, the loop gets one instead (``instrument``)."""
        if not instrument.enabled():
            return False
        loop = instrument.pipelined_loop(module, ports.last_sink) if instrument.loops() == "total" else None
        if loop is None:
            return True
        timed = self._timed_loops.setdefault(loop, [])
        if region.index not in {r.index for r in timed}:
            timed.append(region)
        return False

    @timing.timed("Gluon region builds")
    def _build_gluon_call(self, call, ports, module, gluon_builder, variant: int) -> tuple:
        """``call``'s Gluon function built for the layouts its operands got in ``ports``, with the
        shared layouts of planned handoffs chosen for them; returns (function, wants, plans)."""
        wants, plans = list(call.wants), {}
        for k, (want, value, ty) in enumerate(zip(call.wants, ports.operands, call.leaf_types)):
            if want is not None and want.planned:
                plans[k] = swizzle.plan(gluon_builder, gluon_builder.get_gluon_layout_from_tensor(value),
                                        call.readers.get(k, []), list(ty.shape), ty.element_ty.primitive_bitwidth)
                wants[k] = handoff.Want(plans[k].layout, True, planned=True)
        leaf_types = [want.gluon_type(t) if want else
                      gl.distributed_type(t.element_ty, t.shape, gluon_builder.get_gluon_layout_from_tensor(v))
                      if isinstance(t, tl.block_type) else t
                      for t, v, want in zip(call.leaf_types, ports.operands, wants)]
        arg_types = arguments.with_leaf_types([a.type for a in call.args], iter(leaf_types))
        name = call.region.symbol + (f"_v{variant}" if variant else "")
        try:
            function, _ = lower_gluon.build_gluon_function(call.fn, call.args, arg_types, module=module,
                                                           context=self.context, options=self.options,
                                                           target=self.target, name=name)
        except RegionError:
            raise
        except Exception as exc:
            raise RegionError(call.region.function, str(call.region.call_site), _describe(exc), _GLUON_HINT) from exc
        return function, wants, plans

    def _keep_called(self, module) -> None:
        """Forget Triton regions whose call was discarded (a loop's dry visit on Triton 3.6). Their
        placeholders still get a body: a body-less function must never reach the backend."""
        called = stitch.called_symbols(module)
        self.regions = [r for r in self.regions if r.symbol in called]
        kept = {r.index for r in self.regions}
        self._planned = [p for p in self._planned if p["region"] in kept]

    @timing.timed("stitching")
    def _splice_triton_regions(self, module) -> None:
        for region, lowered, placeholder, tensor_types in self._pending:
            try:
                stitch.bind_ports(lowered, tensor_types, region.index, self.context)
                stitch.splice(module, placeholder, lowered.module, lowered.function)
            except stitch.StitchError as exc:
                raise RegionError(region.function, str(region.call_site), str(exc)) from exc

    @timing.timed("stitching")
    def _stitch(self, module) -> None:
        """Inline every spliced region, connect results, fold boundary conversions, verify, record."""
        try:
            stitch.inline(module, self.context)
            stitch.connect_results(module, self.context)
            loaded = stitch.fold_boundary_conversions(module, self.context)
            stitch.check_no_markers(module)
        except (stitch.StitchError, RuntimeError) as exc:
            names = ", ".join(r.function for r in self.regions) or "?"
            site = str(self.regions[0].call_site) if self.regions else "?"
            raise RegionError(names, site, f"stitching failed: {exc}") from exc
        probe = ScratchProbe(self.context, self.target, self.options)
        try:
            choices, live = planner.plan(module, self.context, probe, planner.mode(),
                                         arch.shared_memory_limit(self.target))
        except (ValueError, RuntimeError) as exc:
            raise RegionError(", ".join(r.function for r in self.regions), str(self.regions[0].call_site),
                              f"planning the boundaries failed: {exc}") from exc
        by_tag = {t: choice for choice in choices for t in choice.tags}
        self.boundaries = [_record(planned, live, loaded, by_tag) for planned in self._planned]
        if instrument.enabled() and self.regions:
            instrument.bracket(module, gluon_ir.GluonOpBuilder(self.context), self._timed_loops)
            stitch.verify(module, "placing the Proton scopes")

    def _plan_gluon_boundaries(self, call, wants: list, plans: dict, ports, produced: list[str]) -> None:
        """Inputs go from the host's layout to the declared one (``@hybrid.takes``; the host's own
        when none is declared) or into a shared buffer; results convert (or, returned in shared
        memory, are loaded) to the layouts the host wants."""
        builder = gluon_ir.GluonOpBuilder(self.context)
        names = [name for name, _ in arguments.leaves(call.args, call.fn.arg_names)]
        fenced = call.reads_async_proxy
        for k, (operand, want, ty) in enumerate(zip(ports.operands, wants, call.leaf_types)):
            given = str(operand.get_type())
            if not given.startswith("tensor<"):
                continue
            wanted = str(want.gluon_type(ty).to_ir(builder)) if want else given
            if want and want.in_shared:
                nbytes = movement.tile_bytes(ty.shape, ty.element_ty.primitive_bitwidth)
                how = "the declared shared layout" if k not in plans else swizzle.describe(plans[k])
                self._plan(call.region, "in", k, names[k], given, wanted, handoff="shared", shared_bytes=nbytes,
                           fences=int(fenced), reason=f"stored once into {how}"
                           + (", then one async-proxy fence for the region's wgmma/tcgen05/TMA" if fenced else ""))
                fenced = False   # one fence serves every buffer stored before it
            else:
                self._plan(call.region, "in", k, names[k], given, wanted)
        for j, own in enumerate(produced):
            wanted = next((str(v.get_type()) for k, v in ports.outputs if k == j), own)
            if bd.is_shared(own):
                self._plan(call.region, "out", j, f"return[{j}]", own, wanted, handoff="shared",
                           reason="loaded from the shared buffer the region returned")
            elif own.startswith("tensor<"):   # the host's first layout for it (a conversion per further one)
                self._plan(call.region, "out", j, f"return[{j}]", own, wanted)

    def close(self) -> None:
        """Drop the region modules (empty shells after splicing, or abandoned after an error)."""
        self._pending.clear()
        self._spare.clear()


def _record(planned: dict, live: dict, loaded: set[str], choices: dict) -> bd.Boundary:
    fields = {k: v for k, v in planned.items() if k not in ("agree", "reason")}
    boundary_tag = bd.tag(planned["region"], planned["direction"], planned["index"])
    remaining = live.get(boundary_tag, [])
    choice = choices.get(boundary_tag)
    if choice is not None and choice.way == "handoff":
        owner = choice.tags[0] == boundary_tag
        fields.update(handoff="shared", movement="shared", shared_bytes=choice.shared_bytes if owner else 0,
                      barriers=int(owner), cost=choice.cost if owner else 0)
        reason = choice.reason if owner else f"loaded from the buffer boundary {choice.tags[0]} handed off"
        return bd.Boundary(**fields, conversions=len(remaining), reason=reason)
    if "reason" in planned:
        reason = planned["reason"]
    elif boundary_tag in loaded and not remaining:
        reason = "loaded from shared memory straight in the region's layout (no conversion)"
        fields["handoff"] = "shared"
    elif planned["agree"]:
        reason = "layouts agree"
    elif not remaining:
        reason = "folded away (the neighbouring conversion already yields the needed layout)" \
            if planned["direction"] == "in" else "folded into the host's own conversion"
    else:
        reason = "converted"
        first = remaining[0]
        fields["from_layout"], fields["to_layout"] = bd.layout_of(first.source), bd.layout_of(first.result)
    if remaining:   # what the conversions move: the costliest decides the kind, bytes and barriers add up
        moves = [c.movement for c in remaining]
        fields["movement"] = max((m.kind for m in moves), key=movement.ORDER.index)
        fields["shared_bytes"] = fields.get("shared_bytes", 0) + sum(m.shared_bytes for m in moves)
        fields["barriers"] = sum(m.barriers for m in moves)
        fields["shuffles"] = sum(m.shuffles for m in moves)
        fields["cost"] = choice.cost if choice is not None and choice.tags[0] == boundary_tag else 0
        reason += f" ({fields['movement']})" if choice is None else f": {choice.reason}"
    return bd.Boundary(**fields, conversions=len(remaining), reason=reason)


def _region_type(ty, function: str, call_site: CallSite):
    """The Triton type a host value has inside a Triton region (layouts are the region's choice)."""
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([_region_type(t, function, call_site) for t in ty.types], ty.fields)
    if isinstance(ty, tl.block_type):
        return tl.block_type(ty.element_ty, ty.shape)
    if isinstance(ty, (tl.dtype, tl.constexpr_type)):
        return ty
    raise RegionError(function, str(call_site), f"a value of type {ty} cannot be passed into a Triton region",
                      "Triton regions take tensors in registers, scalars, pointers and constexprs; "
                      "load shared or tensor memory into registers before the call")


def _host_type(ty, results, builder):
    """The Gluon type of a region result: the Triton type plus the layout the lowering returned."""
    if isinstance(ty, tl.tuple_type):
        return tl.tuple_type([_host_type(t, results, builder) for t in ty.types], ty.fields)
    handle = next(results)
    if isinstance(ty, tl.block_type):
        return gl.distributed_type(ty.element_ty, ty.shape, builder.get_gluon_layout_from_tensor(handle))
    return ty


def _check_arch(module, target, function: str, call_site: str) -> None:
    misplaced = arch.misplaced_ops(module, target)
    if misplaced:
        raise RegionError(function, call_site, arch.describe_misplaced(misplaced, target), ARCH_HINT)


def _verify_hint(errors: str) -> str:
    if "threads per warp" in errors or "warps" in errors:
        return ("a layout written in a Gluon region must match the target's warp size and the kernel's num_warps; "
                "pass target-specific layouts as constexprs")
    return "fix the Gluon function at the file:line above, or the values passed to it at the call site"


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return text if text else type(exc).__name__
