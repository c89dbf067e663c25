"""How a Gluon region takes its tensors from a Triton host: declared layouts and shared memory.

By default a Gluon function called from Triton code receives each tensor in the layout
Triton's passes gave it, and converts it itself. ``@hybrid.takes`` declares instead, per
parameter, either a distributed layout (the host converts to it at the boundary, and the
conversion folds with the host's own where it can) or ``hybrid.shared(layout)``: the host
stores the tensor once into a shared buffer of that layout and the function receives the
``shared_memory_descriptor`` (an MMA operand, a TMA source). A layout may be given as the name
of a constexpr parameter, so that each target gets its own. Results need no declaration: a
returned descriptor is loaded in whatever layout the Triton code around the call wants.
A function that converts a tensor parameter before anything else (``x = gl.convert_layout(x, L)``)
takes it as if it declared ``L`` (``entry_layouts``): its code is the same, and the conversion
moves to the boundary, where the host can make the tile in ``L`` instead (``stitching/access_layouts``).

The compiler (``triton_host.splice``) and the interpreter (``hybrid/interpret/boundary.py``) both
apply these declarations; this module only records and resolves them.
"""
from __future__ import annotations

from dataclasses import dataclass

from triton.experimental.gluon import language as gl

from . import swizzle
from .. import validate
from ..ir.uses import uses
from ..triton.language import DistributedLayout, SharedLayout, unwrap_constexpr
from ..triton.language import core as tl

_ATTR = "_hybrid_takes"
#: ops that read shared memory through the async proxy: a generic store before them needs a fence
ASYNC_PROXY_READERS = ("ttng.warp_group_dot", "ttng.tc_gen5_mma", "ttng.async_tma_copy_local_to_global")


@dataclass(frozen=True)
class Shared:
    """A parameter handed over in shared memory: ``layout`` is a shared layout, a constexpr's
    name, or None: the compiler plans a swizzled layout (``swizzle.plan``) from the host's
    layout for the tensor (the writer) and the layouts the function loads it in (the readers)."""
    layout: object = None


def shared(layout=None) -> Shared:
    return Shared(layout)


@dataclass(frozen=True)
class Want:
    """What one parameter asks of the host, resolved for one call."""
    layout: object          # a distributed layout, or a shared layout when ``in_shared``
    in_shared: bool
    planned: bool = False   # a shared layout the compiler chooses (``layout`` is a placeholder until then)

    def gluon_type(self, ty: tl.block_type):
        """The type the Gluon function is built with for a host tensor of type ``ty``."""
        if self.in_shared:
            return gl.shared_memory_descriptor_type(ty.element_ty, list(ty.shape), self.layout, list(ty.shape))
        return gl.distributed_type(ty.element_ty, list(ty.shape), self.layout)


def takes(**params):
    """Decorate a ``@gluon.jit`` function with the layout (or ``shared(layout)``) each named
    tensor parameter wants; see the module docstring."""
    def decorate(fn):
        unknown = sorted(set(params) - set(fn.arg_names))
        if unknown:
            raise TypeError(f"hybrid.takes on '{fn.__name__}': no parameter named {', '.join(unknown)} "
                            f"(parameters: {', '.join(fn.arg_names)})")
        setattr(fn, _ATTR, dict(params))
        return fn
    return decorate


def declares(fn) -> bool:
    """Whether ``fn`` has ``@hybrid.takes`` declarations."""
    return bool(getattr(fn, _ATTR, None))


def wants(fn, arguments: dict) -> dict[str, Want]:
    """``fn``'s declarations for one call (``arguments``: parameter name -> bound value), with
    constexpr names resolved; ``ValueError`` names the parameter where a declaration is unusable."""
    resolved = {}
    for name, declared in getattr(fn, _ATTR, {}).items():
        value = arguments[name]
        if not isinstance(getattr(value, "type", None), tl.block_type):
            raise ValueError(f"parameter '{name}' declares a layout but receives {value!r}, not a tensor")
        in_shared = isinstance(declared, Shared)
        if in_shared and declared.layout is None:
            resolved[name] = Want(swizzle.plain(len(value.type.shape)), True, planned=True)
            continue
        layout = _value_of(declared.layout if in_shared else declared, arguments, name)
        kind, expected = (SharedLayout, "a shared layout") if in_shared else (DistributedLayout, "a distributed layout")
        if not isinstance(layout, kind):
            raise ValueError(f"parameter '{name}' declares {layout!r}, which is not {expected}")
        rank = validate.rank_of(layout, value.type.shape)
        if rank != len(value.type.shape):
            raise ValueError(f"parameter '{name}' declares a rank-{rank} layout ({layout!r}) for a rank-"
                             f"{len(value.type.shape)} tensor of shape {list(value.type.shape)}")
        resolved[name] = Want(layout, in_shared)
    return resolved


def _value_of(layout, arguments: dict, name: str):
    if not isinstance(layout, str):
        return layout
    if layout not in arguments:
        raise ValueError(f"parameter '{name}' declares the layout of '{layout}', which is not a parameter")
    return unwrap_constexpr(arguments[layout])


def entry_layouts(module, function_name: str, names: list[str], builder) -> tuple[dict[str, Want], list[str]]:
    """Per runtime leaf of ``names`` (``function_name``'s arguments in ``module``, a probe build in
    placeholder layouts) whose only use is a ``ttg.convert_layout``: a ``Want`` of the layout
    converted to. A leaf whose placeholder layout shows in any other value's type is left out: the
    code may have read the argument's layout (``x.type.layout``), so another layout would change
    it; or the code uses that layout itself (a port's one-a-thread store layout is the 1-D
    placeholder). Those leaves are returned second, for a probe in another placeholder to tell."""
    function = module.get_function(function_name)
    if function.get_num_args() != len(names):
        return {}, []
    users, _ = uses(module, lambda op: False)
    types: list[str] = []
    module.walk(lambda op: types.extend(str(op.get_result(i).get_type()) for i in range(op.get_num_results())))
    found: dict[str, Want] = {}
    unsure: list[str] = []
    for k, name in enumerate(names):
        argument = function.args(k)
        text, converted = str(argument.get_type()), _only_conversion(module, users, argument)
        if not text.startswith("tensor<") or converted is None:
            continue
        placeholder = text[text.index(", ") + 2:-1]
        if any(placeholder in t for t in types):
            unsure.append(name)
        else:
            found[name] = Want(builder.get_gluon_layout_from_tensor(converted.get_result(0)), False)
    return found, unsure


def _only_conversion(module, users: dict[int, list], argument, depth: int = 0):
    """The ``ttg.convert_layout`` that is the only use of ``argument``, or of the parameter of a
    function it is passed to once and used by nothing else (a port per call site: the function the
    kernel calls only calls the port of the site's specialization); else None."""
    only = users.get(argument.id(), [])
    if len(only) != 1:
        return None
    if only[0].get_name() == "ttg.convert_layout":
        return only[0]
    if only[0].get_name() != "tt.call" or depth > 4:
        return None
    call = only[0]
    passed = [i for i in range(call.get_num_operands()) if call.get_operand(i).id() == argument.id()]
    callee = module.get_function(call.get_flat_symbol_ref_attr("callee"))
    if len(passed) != 1 or callee is None or callee.get_num_args() != call.get_num_operands():
        return None
    return _only_conversion(module, users, callee.args(passed[0]), depth + 1)


def reads_async_proxy(module) -> bool:
    """Whether ``module`` has an op that reads shared memory through the async proxy."""
    found = []
    module.walk(lambda op: found.append(op.get_name()) if op.get_name().startswith(ASYNC_PROXY_READERS) else None)
    return bool(found)


def readers(module, function_name: str, builder) -> dict[int, list]:
    """Per argument index of ``function_name`` in ``module``, the layouts its ``ttg.local_load``
    ops read that argument (a shared buffer) in."""
    function = module.get_function(function_name)
    arguments = {function.args(i).id(): i for i in range(function.get_num_args())}
    found: dict[int, list] = {}

    def visit(op):
        if op.get_name() == "ttg.local_load" and op.get_operand(0).id() in arguments:
            found.setdefault(arguments[op.get_operand(0).id()], []).append(
                builder.get_gluon_layout_from_tensor(op.get_result(0)))

    module.walk(visit)
    return found
