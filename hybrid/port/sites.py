"""A function its kernel calls at several sites that Triton lowers differently.

Upstream's attention backward calls ``_attn_bwd_dkdv`` with ``MASK=True`` on 16-row tiles, then
with ``MASK=False`` on 32-row tiles: the IR of one call is no port of the other (its tile shapes
are written into it, the mask folded away), and swapped in at both it compiles and computes
wrong results. So each distinct specialization (its IR, constants and constexprs) gets a port of
its own, ``<name>_0``, ``<name>_1``, ..., and the kernel calls ``<name>`` at every site: a
``@gluon.jit`` function that picks each site's port at compile time by what tells the sites
apart (constexprs first, then argument types, ranks, shapes, layouts). Sites nothing said in
Gluon tells apart are refused, every one named.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from interop.lowering.lower_triton import REGION_FUNCTION
from interop.lowering.triton_regions import RecordedCall

from .errors import PortError, where
from .names import returns_value
from .gluon_emit import Layouts, TensorType, dtype
from .ttgir_text import parse


@dataclass(frozen=True)
class Site:
    """One call of the function in the kernel: where it is, and what Triton lowered for it."""
    where: str            # file:line of the call
    call: RecordedCall
    crossings: object     # ``from_ttgir.Crossings``: how the kernel moved its inputs at this call
    #: (file, line) of a Triton kernel's call, whose ops the kernel inlined there (``inlined.read``)
    at: tuple[str, int] | None = None

    @property
    def key(self) -> tuple:
        """Sites with the same key take the same port."""
        return (self.call.text, repr(sorted(self.call.specialized.items())),
                repr(sorted((k, repr(v)) for k, v in self.call.constexprs.items())))

    def described(self) -> str:
        """``file:line (MASK=True, BLOCK_M=16; x: tensor<16x32xf32>)``: the call and what sets it apart."""
        given = ", ".join(f"{k}={v!r}" for k, v in {**self.call.constexprs, **self.call.specialized}.items())
        types = ", ".join(f"{name}: {ty}" for name, ty in arguments(self.call).items())
        return f"{self.where} ({'; '.join(part for part in (given, types) if part)})"


@dataclass(frozen=True)
class Specialization:
    """The sites that take one port, and the condition on the dispatcher's parameters that holds
    at them and at no other site."""
    sites: tuple[Site, ...]
    condition: str

    @property
    def call(self) -> RecordedCall:
        return self.sites[0].call


def specializations(sites: tuple[Site, ...]) -> list[tuple[Site, ...]]:
    """``sites`` grouped by the port they take, in call order."""
    groups: dict[tuple, list[Site]] = {}
    for site in sites:
        groups.setdefault(site.key, []).append(site)
    return [tuple(group) for group in groups.values()]


def arguments(call: RecordedCall) -> dict[str, str]:
    """The call's runtime arguments by parameter name, each with its IR type (layout spelled out)."""
    module = parse(call.text, REGION_FUNCTION)
    tensor = call.lowered.leaf_is_tensor
    names = [n for n, t in zip(call.leaf_names, tensor) if not t] + [n for n, t in zip(call.leaf_names, tensor) if t]
    return {name: re.sub(r"#\w+", lambda m: module.aliases.get(m.group(), m.group()), ty)
            for (_, ty), name in zip(module.args, names)}


def dispatch(fn, groups: list[tuple[Site, ...]]) -> tuple[list[Specialization], set[str]]:
    """Each group with the condition that picks it, and the imports its layouts need; a
    ``PortError`` naming every site where what sets two groups apart cannot be said in Gluon."""
    features = _features(fn, groups)
    apart = {(a, b) for a in range(len(groups)) for b in range(a + 1, len(groups))}
    chosen = []
    for values in features:   # in order of preference: constexprs first, layouts last
        split = {(a, b) for a, b in apart if values[a][0] != values[b][0]}
        if split:
            chosen.append(values)
            apart -= split
    if apart:
        sites = "; ".join(site.described() for group in groups for site in group)
        raise PortError(f"{fn.__name__} ({where(fn)}) is called at {sum(map(len, groups))} sites that Triton lowers "
                        f"in {len(groups)} different ways, and what sets some of them apart (their arguments' "
                        f"specialization or layouts) cannot be told apart in Gluon, so no one port can serve each "
                        f"site: {sites}. Nothing was written; give those calls functions of their own and port each")
    imports = set().union(*(values[k][2] for values in chosen for k in range(len(groups))))
    return [Specialization(group, " and ".join(f"({values[k][1]})" for values in chosen) or "True")
            for k, group in enumerate(groups)], imports


def _features(fn, groups: list[tuple[Site, ...]]) -> list[list[tuple]]:
    """What may tell the groups apart, each as one (value, Gluon condition, imports) per group,
    only where every group can say it in a condition its sites evaluate at compile time."""
    calls = [group[0].call for group in groups]
    found: list[list[tuple]] = []
    given = [(p.name, [c.constexprs.get(p.name) for c in calls]) for p in fn.params if p.is_constexpr]
    given += [(p.name, [c.specialized[p.name] for c in calls]) for p in fn.params   # a constexpr of the dispatcher
              if not p.is_constexpr and all(p.name in c.specialized for c in calls)]
    for name, values in given:
        if all(literal(v) for v in values):
            found.append([(repr(v), f"{name} == {v!r}", set()) for v in values])
    typed = [arguments(c) for c in calls]
    names = [name for name in typed[0] if name.isidentifier() and all(name in t for t in typed)]
    types = {name: [TensorType.parse(t[name]) for t in typed] for name in names}
    for name, tys in types.items():
        try:
            found.append([(ty.element, f"{name}.dtype == {dtype(ty.element)}", set()) for ty in tys])
        except KeyError:
            pass
    for name, tys in types.items():
        if all(ty.layout for ty in tys):   # the rank, then (where one) each dimension: before layouts,
            # which a build for other operand layouts (a Triton host's probe) does not keep
            found.append([(len(ty.shape), f"len({name}.shape) == {len(ty.shape)}", set()) for ty in tys])
        if all(ty.layout for ty in tys) and len({len(ty.shape) for ty in tys}) == 1:
            found += [[(ty.shape[d], f"{name}.shape[{d}] == {ty.shape[d]}", set()) for ty in tys]
                      for d in range(len(tys[0].shape))]
    for name, tys in types.items():
        if all(ty.layout for ty in tys):
            found.append([_layout_condition(name, ty) for ty in tys])
    return found


def _layout_condition(name: str, ty: TensorType) -> tuple:
    layouts = Layouts({})
    return ty.layout, f"{name}.type.layout == {layouts.expression(layouts.name(ty.layout, ty.shape))}", layouts.imports


def literal(value) -> bool:
    """A value a condition can spell as a Python literal that reads back equal."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int, str))


def suffixed(helpers: list[str], function: str, suffix: str) -> tuple[list[str], str]:
    """A port's helper functions (combine functions, while conditions) renamed with ``suffix``,
    and the port calling them so, to live in one module with another port's."""
    names = [m for helper in helpers for m in re.findall(r"^def (\w+)\(", helper, flags=re.M)]
    rename = (lambda text: re.sub(rf"\b({'|'.join(map(re.escape, names))})\b", rf"\1{suffix}", text)) if names \
        else (lambda text: text)
    return [rename(helper) for helper in helpers], rename(function)


def dispatcher(fn, name: str, specializations: list[Specialization], constexprs: set[str]) -> str:
    """The ``@gluon.jit`` function the kernel calls at every site: each site's port, picked at
    compile time; a site none was written for is a compile error saying so."""
    params = ", ".join(f"{p.name}: gl.constexpr" if p.name in constexprs else p.name for p in fn.params)
    passed = ", ".join(p.name for p in fn.params)
    returns = "return " if returns_value(fn) else ""
    lines = ["@gluon.jit", f"def {name}({params}):",
             f'    """{fn.__name__} as its kernel calls it at each site: the port of that site\'s specialization."""']
    for k, spec in enumerate(specializations):
        lines += [f"    # {site.described()}" for site in spec.sites]
        lines += [f"    {'if' if k == 0 else 'elif'} {spec.condition}:", f"        {returns}{name}_{k}({passed})"]
    written = ", ".join(site.where for spec in specializations for site in spec.sites)
    lines += ["    else:", f'        gl.static_assert(False, "{name} was written for the calls at {written}: port '
                            f'{fn.__name__} again for this call")']
    return "\n".join(lines)

