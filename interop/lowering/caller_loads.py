"""``hybrid.caller_load``: a Gluon load of a pointer tile that a Triton caller issues itself, just
before the call, where its own loop can software-pipeline it.

A Triton kernel whose loop calls a ``@triton.jit`` function has the function's loads pipelined by
Triton (issued for a later iteration ahead of it: ``cp.async`` into shared memory on NVIDIA, a
register prefetch on AMD). A Gluon call is opaque to that pipeliner, so the same load written in a
Gluon function runs when the call runs. ``caller_load`` marks such a load. In a Gluon region of a
Triton kernel built by ``hybrid``, a marked load at the top of the function (no write before it)
whose pointer tile and mask are the function's parameters (as passed, or converted) and whose
``other`` is a Python scalar is *hoisted*: the host issues the same ``tl.load`` of the tiles it
passes, right before the opaque call, so Triton's own passes (coalescing, pipelining) treat it as
the all-Triton kernel's load; the Gluon function is built with one more parameter, the loaded tile,
in place of the load, and the boundary converts (or Triton's passes lay out) the tile into the
layout the author's load had. Reading memory earlier is the same program: nothing the function
does comes before it. Anywhere else (a Gluon kernel, upstream's compiler, the interpreter, a load
that is not hoistable) it is ``gl.load``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import interception
from ..ir.walk import function_blocks, result_types, walk_function
from ..stitching.access_layouts import load_operands
from ..triton import compat
from ..triton.bindings import gluon_ir
from ..triton.language import core as tl

#: The attribute of a marked ``tt.load``: its ``other`` (``_encode``).
MARK = "hybrid.caller_load"
#: Ops that may come before a hoisted load in the function: they write nothing, so the host may
#: read memory ahead of them (other loads included: reads reorder freely with reads).
_EFFECT_FREE = ("ttg.convert_layout", "tt.splat", "tt.make_range", "tt.broadcast", "tt.expand_dims", "tt.addptr",
                "tt.load", "tt.reshape", "tt.trans", "ttg.local_load", "gpu.thread_id", "tt.get_program_id")
_EFFECT_FREE_DIALECTS = ("arith.", "math.")


@tl.builtin
def caller_load(pointer, mask=None, other=None, _semantic=None, _generator=None):
    """``gl.load(pointer, mask, other)``, issued by the Triton kernel that calls this Gluon
    function, before the call, where it can (see the module): its loop then pipelines it."""
    from triton.experimental.gluon import language as gl
    loaded = gl.load(pointer, mask=mask, other=other, _semantic=_semantic)
    compile_context = interception.compile_of(_generator)
    scalar = _scalar(other)
    if compile_context is not None and compile_context.host_language == "triton" and scalar is not _TENSOR \
            and isinstance(_semantic.builder, gluon_ir.GluonOpBuilder):
        loaded.handle.set_attr(MARK, _semantic.builder.get_string_attr(_encode(scalar)))
    return loaded


caller_load.hybrid_name = "hybrid.caller_load"

_TENSOR = object()   # an ``other`` that is a tensor: the host cannot make it, the load stays in the function


def _scalar(other):
    value = other.value if isinstance(other, tl.constexpr) else other
    return value if value is None or isinstance(value, (bool, int, float)) else _TENSOR


def _encode(value) -> str:
    return "none" if value is None else f"{type(value).__name__}:{value!r}"


def _decode(text: str):
    if text == "none":
        return None
    kind, literal = text.split(":", 1)
    return {"bool": lambda s: s == "True", "int": int, "float": float}[kind](literal)


#: The end of a hoisted load's boundary value name (the pointer tile's name before it).
HOISTED = " (loaded by the caller: hybrid.caller_load)"


def hoisted(boundaries) -> int:
    """How many of a built kernel's boundaries are hoisted loads."""
    return sum(b.value.endswith(HOISTED) for b in boundaries)


@dataclass(frozen=True)
class Hoist:
    """One marked load a Triton host issues for the call: which of the function's marked loads
    (in walk order), the leaves its pointer tile and mask are, and its ``other``."""
    index: int
    pointer: int
    mask: int | None
    other: bool | int | float | None


def hoistable(module, function_name: str) -> list[Hoist]:
    """The marked loads of ``function_name`` in ``module`` (a probe build) a host can issue: of a
    tile, at the top of the function, after nothing that writes, of parameters (perhaps converted)."""
    function = module.get_function(function_name)
    args = {function.args(i).id(): i for i in range(function.get_num_args())}
    marked = {load.get_result(0).id(): k for k, load in enumerate(_marked(module, function))}   # -> walk order
    entry = function_blocks(module, function)[0].id() if marked else None   # (not a loop's or branch's)
    producers: dict[int, object] = {}
    hoists: list[Hoist] = []
    blocked = [False]

    def leaf(value) -> int | None:
        while value is not None and value.id() not in args:
            op = producers.get(value.id())
            value = op.get_operand(0) if op is not None and op.get_name() == "ttg.convert_layout" else None
        return None if value is None else args[value.id()]

    def visit(op):
        for i in range(op.get_num_results()):
            producers[op.get_result(i).id()] = op
        if blocked[0] or op.get_block() is None or op.get_block().id() != entry:
            return
        if op.get_name() == "tt.load" and op.get_str_attr(MARK) is not None \
                and str(op.get_result(0).get_type()).startswith("tensor<"):   # (a scalar's load is one thread's)
            pointers, mask, _ = load_operands(op)
            found = [leaf(pointers), None if mask is None else leaf(mask)]
            if found[0] is not None and (mask is None or found[1] is not None):
                hoists.append(Hoist(marked[op.get_result(0).id()], found[0], found[1], _decode(op.get_str_attr(MARK))))
        elif not (op.get_name() in _EFFECT_FREE or op.get_name().startswith(_EFFECT_FREE_DIALECTS)):
            blocked[0] = True   # a write, a call or a region: no load after it is read ahead of it

    if marked:
        walk_function(module, function, visit)
    return hoists


def issue(semantic, leaves: list, hoists: list[Hoist]) -> list:
    """The host's loads for ``hoists`` (``leaves``: the call's runtime leaves, Triton tensors)."""
    return [tl.load(leaves[h.pointer], mask=None if h.mask is None else leaves[h.mask], other=h.other,
                    _semantic=semantic) for h in hoists]


def take(module, function, builder, hoisted: list[int]) -> list:
    """``function`` (built in ``module``) with each of its marked loads of index in ``hoisted``
    replaced by a new last parameter of its type, and every other marked load of the module (the
    functions it calls included) made again unmarked: a plain load (an attribute would keep
    Triton's access rewriting off, ``access_layouts``). Returns the new parameters' types, in
    ``hoisted``'s order."""
    own = _marked(module, function)
    taken = {own[k].get_result(0).id() for k in hoisted}
    body = function_blocks(module, function)[0]
    types = []
    for k in hoisted:
        result = own[k].get_result(0)
        body.add_argument(result.get_type())
        result.replace_all_uses_with(body.arg(body.get_num_arguments() - 1))
        types.append(result.get_type())
    for load in _marked(module):
        result = load.get_result(0)
        if result.id() not in taken:
            pointers, mask, other = load_operands(load)
            builder.set_insertion_point_after(load)
            plain = compat.create_plain_load(builder, pointers, mask, other)
            plain.set_loc(result.get_loc())
            result.replace_all_uses_with(plain)
    if types:
        function.reset_type(builder.get_function_ty(list(function.type.param_types()) + types,
                                                    result_types(module, function)))
    return types


def _marked(module, function=None) -> list:
    """The marked loads of ``function`` (of the whole module where None), in walk order."""
    found: list = []

    def visit(op):
        if op.get_name() == "tt.load" and op.get_str_attr(MARK) is not None:
            found.append(op)

    if function is None:
        module.walk(visit)
    else:
        walk_function(module, function, visit)
    return found
