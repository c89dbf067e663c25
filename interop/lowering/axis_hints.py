"""What Triton's axis analysis may know of a host tensor that a Triton region takes as an argument.

A Triton region takes its tensor inputs as function arguments, and of an argument Triton's
AxisInfo analysis knows nothing (contiguity, divisibility and constancy 1). A pointer tensor the
Gluon host built from ``gl.arange`` would then neither vectorize nor pipeline inside the region
(no ``cp.async``, scalar loads) as it does in the all-Triton kernel. Triton takes such facts from
``tt.contiguity`` / ``tt.divisibility`` / ``tt.constancy`` argument attributes; this module derives
them from the host ops that built the value, by Triton's own AxisInfo rules for the few ops that
build addresses (``make_range``, ``splat``, ``broadcast``, ``expand_dims``, ``addi``/``addptr``,
``muli``, sign extensions, constants, the kernel's specialized arguments, a loop's induction
variable). Any other op makes a
value unknown (all 1), and where a rule of Triton's would claim more than it can prove
(divisibility across a run that an addition shortened) the weaker fact is kept: a hint is never
stronger than the truth, so a hinted region computes what an unhinted one does.

The region function is a root of the module's call graph while Triton's ttgir passes run
(``lower_triton.take_host_layouts``), so its arguments keep these attributes.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..ir.uses import producers
from ..triton import compat

_MAX = 1 << 30   # attributes are i32; any power of two is a sound lower bound of a larger one
_BYTES = {"i1": 1, "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1, "f8E4M3FNUZ": 1, "f8E5M2FNUZ": 1, "i16": 2, "f16": 2,
          "bf16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}


@dataclass(frozen=True)
class AxisFacts:
    """Per dimension: the length of runs of consecutive integers (contiguity), the largest power
    of two dividing every run's first element (divisibility), the length of runs of equal values
    (constancy); and the value where it is one known constant."""
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @staticmethod
    def unknown(rank: int) -> "AxisFacts":
        return AxisFacts((1, ) * rank, (1, ) * rank, (1, ) * rank)

    def attributes(self) -> str:
        """The facts as a function argument's attribute dictionary ("" where nothing is known)."""
        named = {"tt.contiguity": self.contiguity, "tt.divisibility": self.divisibility,
                 "tt.constancy": self.constancy}
        known = [f"{name} = dense<[{', '.join(str(min(v, _MAX)) for v in values)}]> : tensor<{len(values)}xi32>"
                 for name, values in named.items() if any(v > 1 for v in values)]
        return "{" + ", ".join(known) + "}" if known else ""


def highest_pow2_divisor(value: int) -> int:
    return _MAX if value == 0 else min(value & -value, _MAX)


class HostValues:
    """The ops of a host module by the values they define, and the kernel arguments' attributes."""

    def __init__(self, module, builder, kernel_args: dict[int, list], outer: dict[int, int] | None = None):
        """``outer``: value ids that stand for other values of ``module`` (a Gluon region's
        arguments for its Triton host's operands), whose facts are theirs."""
        self._defining = producers(module)
        self._loops = _induction_variables(module)
        self._kernel_args = kernel_args
        self._outer = outer or {}
        self._memo: dict[int, AxisFacts] = {}
        self._integers = compat.Integers(module, builder)

    def hints(self, value) -> str:
        """The argument attributes for host tensor ``value``."""
        return self.facts(value.id(), str(value.get_type())).attributes()

    def facts(self, value_id: int, type_text: str) -> AxisFacts:
        if value_id not in self._memo:
            self._memo[value_id] = self._derive(value_id, _shape(type_text) or [1])
        return self._memo[value_id]

    def _operand(self, op, i: int) -> AxisFacts:
        operand = op.get_operand(i)
        return self.facts(operand.id(), str(operand.get_type()))

    def _derive(self, value_id: int, shape: list[int]) -> AxisFacts:
        rank = len(shape)
        value_id = self._outer.get(value_id, value_id)
        if value_id in self._kernel_args:
            divisibility = dict(self._kernel_args[value_id]).get("tt.divisibility", 1)
            return AxisFacts((1, ), (highest_pow2_divisor(divisibility), ), (1, ))
        loop = self._loops.get(value_id)
        if loop is not None:   # lower bound + k * step: divisible by what divides both
            lower, step = self._operand(loop, 0), self._operand(loop, 2)
            return AxisFacts((1, ), (math.gcd(lower.divisibility[0], step.divisibility[0]), ), (1, ))
        op = self._defining.get(value_id)
        if op is None:
            return AxisFacts.unknown(rank)
        name = op.get_name()
        if name == "arith.constant":
            value = self._integers.integer_constant(op)
            if value is None:   # a float or a constant of distinct elements
                return AxisFacts.unknown(rank)
            return AxisFacts((1, ) * rank, (highest_pow2_divisor(value), ) * rank, tuple(shape), value)
        if name == "tt.make_range":
            return AxisFacts((shape[0], ), (highest_pow2_divisor(self._integers.int_attr(op, "start")), ), (1, ))
        if name in ("arith.extsi", "arith.extui", "ttg.convert_layout"):
            return self._operand(op, 0)
        if name == "tt.splat":
            source = self._operand(op, 0)
            return AxisFacts((1, ) * rank, (source.divisibility[0], ) * rank, tuple(shape), source.constant)
        if name == "tt.expand_dims":
            source_shape = _shape(str(op.get_operand(0).get_type()))
            axis = next(d for d in range(rank) if d >= len(source_shape) or source_shape[d] != shape[d])
            return _expand_dims(self._operand(op, 0), axis)
        if name == "tt.broadcast":
            source = self._operand(op, 0)
            src_shape = _shape(str(op.get_operand(0).get_type()))
            return AxisFacts(
                tuple(1 if s == 1 else c for s, c in zip(src_shape, source.contiguity)), source.divisibility,
                tuple(r if s == 1 else k for s, r, k in zip(src_shape, shape, source.constancy)), source.constant)
        if name in ("arith.addi", "tt.addptr"):
            scale = _pointee_bytes(str(op.get_result(0).get_type())) if name == "tt.addptr" else 1
            return _add(self._operand(op, 0), self._operand(op, 1), scale, name == "arith.addi")
        if name == "arith.muli":
            return _mul(self._operand(op, 0), self._operand(op, 1))
        return AxisFacts.unknown(rank)


def _induction_variables(module) -> dict[int, object]:
    """The induction variable's value id -> its ``scf.for``, for every loop of ``module``."""
    loops: dict[int, object] = {}    # body region id -> the loop
    bodies: dict[int, object] = {}   # region id -> its (first) block
    module.walk(lambda op: loops.setdefault(op.get_region(0).id(), op) if op.get_name() == "scf.for" else
                bodies.setdefault(op.get_block().get_parent().id(), op.get_block()) if op.get_block() else None)
    return {bodies[region].arg(0).id(): loop for region, loop in loops.items() if region in bodies}


def _expand_dims(source: AxisFacts, axis: int) -> AxisFacts:
    """Triton's rule: the new dimension's divisibility is what every element is known to be
    divisible by (a contiguous dimension contributes 1)."""
    if source.constant is not None:
        divisor = highest_pow2_divisor(source.constant)
    else:
        divisor = _MAX
        for c, d in zip(source.contiguity, source.divisibility):
            divisor = math.gcd(divisor, 1 if c > 1 else d)

    def insert(values: tuple, new: int) -> tuple:
        return values[:axis] + (new, ) + values[axis:]

    return AxisFacts(insert(source.contiguity, 1), insert(source.divisibility, divisor),
                     insert(source.constancy, 1), source.constant)


def _add(lhs: AxisFacts, rhs: AxisFacts, scale: int, fold: bool) -> AxisFacts:
    contiguity = tuple(max(math.gcd(lc, rk), math.gcd(lk, rc))
                       for lc, lk, rc, rk in zip(lhs.contiguity, lhs.constancy, rhs.contiguity, rhs.constancy))
    # An operand's divisibility holds at its own runs' starts: where the sum's runs are shorter,
    # other elements start runs, of which nothing is known.
    divisibility = tuple(
        math.gcd(ld if lc <= c or lc == 1 else 1, min(rd * scale, _MAX) if rc <= c or rc == 1 else 1)
        for c, lc, ld, rc, rd in zip(contiguity, lhs.contiguity, lhs.divisibility, rhs.contiguity, rhs.divisibility))
    constancy = tuple(math.gcd(a, b) for a, b in zip(lhs.constancy, rhs.constancy))
    constant = lhs.constant + rhs.constant if fold and None not in (lhs.constant, rhs.constant) else None
    return AxisFacts(contiguity, divisibility, constancy, constant)


def _mul(lhs: AxisFacts, rhs: AxisFacts) -> AxisFacts:
    contiguity = tuple(max(lc if rhs.constant == 1 else 1, rc if lhs.constant == 1 else 1)
                       for lc, rc in zip(lhs.contiguity, rhs.contiguity))
    divisibility = tuple(
        min((ld if lc == 1 or rhs.constant == 1 else 1) * (rd if rc == 1 or lhs.constant == 1 else 1), _MAX)
        for lc, ld, rc, rd in zip(lhs.contiguity, lhs.divisibility, rhs.contiguity, rhs.divisibility))
    constancy = tuple(math.gcd(a, b) for a, b in zip(lhs.constancy, rhs.constancy))
    constant = lhs.constant * rhs.constant if None not in (lhs.constant, rhs.constant) else None
    return AxisFacts(contiguity, divisibility, constancy, constant)


def _shape(type_text: str) -> list[int]:
    """The shape of a printed ranked tensor type (``[]`` for a scalar)."""
    match = re.match(r"tensor<((?:\d+x)+)", type_text)
    return [int(d) for d in match.group(1).rstrip("x").split("x")] if match else []


def _pointee_bytes(type_text: str) -> int:
    """The element size of a pointer (tensor) type; 1 where unknown (a weaker, still true fact)."""
    match = re.search(r"!tt\.ptr<(\w+)", type_text)
    return _BYTES.get(match.group(1), 1) if match else 1


def with_argument_attributes(module_text: str, function: str, attributes: dict[int, str]) -> str:
    """``module_text`` with ``attributes[k]`` (an attribute dictionary) on argument ``k`` of
    ``function``'s signature: surgery at the signature only, the module is re-parsed and verified
    by the caller."""
    head, marker, rest = module_text.partition(f"@{function}(")
    if not marker:
        raise ValueError(f"no function @{function} in the module")
    depth, start, arguments, end = 0, 0, [], None
    for i, char in enumerate(rest):
        if char in "(<[{":
            depth += 1
        elif char in ")>]}":
            if depth == 0:
                arguments.append(rest[start:i])
                end = i
                break
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append(rest[start:i])
            start = i + 1
    for k, attribute in attributes.items():
        if attribute:
            text = arguments[k]
            location = text.rfind(" loc(")
            cut = location if location >= 0 else len(text)
            arguments[k] = f"{text[:cut]} {attribute}{text[cut:]}"
    return head + marker + ",".join(arguments) + rest[end:]
