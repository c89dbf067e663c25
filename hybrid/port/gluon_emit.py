"""TritonGPU IR -> Gluon source: one rule per op, in one table (``RULES``), like a lowering table.

Every layout the IR names becomes a constant at the top of the port's function (``BLOCKED``,
``MMA``, ...), every op one Gluon call with that layout spelled out where Gluon needs it
(``gl.arange``, ``gl.full``, ``gl.convert_layout``), values keep the names Triton's printer gave them (the
source variable, from the op's location), ``scf.for`` is a Python loop with its carried values
reassigned at the end of the body, and each run of ops is preceded by the Triton source line
it came from. Building the Gluon source the rules write gives back the very ops they were read
from, so the port keeps the layouts Triton's passes chose and adds no conversion.

An op with no rule, or an attribute a rule cannot carry over, is an ``Unsupported`` naming the
op and where it came from: the port is refused rather than written wrong.
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import math
import re
import struct
from dataclasses import dataclass, field

from interop.lowering.amd_hints import classes_of
from interop.triton import compat

from .ttgir_text import Block, Module, Op, Where, signature_split, used_from_outside

DTYPES = {"f32": "gl.float32", "f16": "gl.float16", "bf16": "gl.bfloat16", "f64": "gl.float64", "i1": "gl.int1",
          "i8": "gl.int8", "i16": "gl.int16", "i32": "gl.int32", "i64": "gl.int64", "f8E4M3FN": "gl.float8e4nv",
          "f8E5M2": "gl.float8e5", "f8E4M3FNUZ": "gl.float8e4b8", "f8E5M2FNUZ": "gl.float8e5b16"}
BINARY = {"arith.addf": "+", "arith.addi": "+", "arith.subf": "-", "arith.subi": "-", "arith.mulf": "*",
          "arith.muli": "*", "arith.divf": "/", "arith.divsi": "//", "arith.remsi": "%", "arith.remf": "%",
          "arith.andi": "&", "arith.ori": "|", "arith.xori": "^", "arith.shli": "<<", "arith.shrsi": ">>"}
UNSIGNED_BINARY = {"arith.divui": "//", "arith.remui": "%", "arith.shrui": ">>"}
PREDICATES = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">=", "eq": "==", "ne": "!=",
              "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
UNSIGNED_PREDICATES = {"ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CALLS = {"math.exp": "gl.exp", "math.exp2": "gl.exp2", "math.log": "gl.log", "math.log2": "gl.log2",
         "math.sqrt": "gl.sqrt", "math.rsqrt": "gl.rsqrt", "math.sin": "gl.sin", "math.cos": "gl.cos",
         "math.absf": "gl.abs", "math.absi": "gl.abs", "math.floor": "gl.floor", "math.ceil": "gl.ceil",
         "math.erf": "gl.erf", "math.fma": "gl.fma", "tt.precise_sqrt": "gl.sqrt_rn", "tt.precise_divf": "gl.div_rn",
         "arith.maxnumf": "gl.maximum", "arith.minnumf": "gl.minimum", "arith.maxsi": "gl.maximum",
         "arith.minsi": "gl.minimum", "tt.mulhiui": "gl.umulhi"}
CASTS = {"arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "arith.extsi", "arith.trunci"}
AXES = {"x": 0, "y": 1, "z": 2}
HOPPER = "from triton.experimental.gluon.language.nvidia.hopper import {}"
BLACKWELL = "from triton.experimental.gluon.language.nvidia.blackwell import {}"
CACHE = {"ca": ".ca", "cg": ".cg", "cv": ".cv", "wb": ".wb", "cs": ".cs", "wt": ".wt"}
RMW = {"fadd": "gl.atomic_add", "add": "gl.atomic_add", "max": "gl.atomic_max", "min": "gl.atomic_min",
       "and": "gl.atomic_and", "or": "gl.atomic_or", "xor": "gl.atomic_xor", "exch": "gl.atomic_xchg"}
#: Ops the port leaves out: they carry nothing the Gluon build does not recreate.
SKIPPED = {"tt.return", "ttg.local_dealloc"}


class Unsupported(Exception):
    """An op (or attribute) the port cannot write as Gluon."""

    def __init__(self, op: Op, why: str, where: Where | None):
        self.op, self.why, self.where = op, why, where
        at = f"{where.file}:{where.line}" if where else "an unknown line"
        super().__init__(f"{op.name} ({at}): {why}")


@dataclass
class TensorType:
    shape: list[int]
    element: str            # "f32", "!tt.ptr<f16>"
    layout: str | None      # "#blocked" or an inline attribute; None for a scalar

    @staticmethod
    def parse(text: str) -> "TensorType":
        text = text.strip()
        for prefix in ("tensor<", "!ttg.memdesc<"):
            if text.startswith(prefix) and text.endswith(">"):
                dims_element, _, rest = text[len(prefix):-1].partition(", ")
                parts = dims_element.split("x")
                count = next(i for i, part in enumerate(parts) if not part.isdigit())
                return TensorType([int(d) for d in parts[:count]], "x".join(parts[count:]), rest.split(", ")[0]
                                  if prefix != "tensor<" else rest)
        return TensorType([], text, None)


def dtype(element: str) -> str:
    if element.startswith("!tt.ptr<"):
        return f"gl.pointer_type({dtype(element[8:-1])})"
    if element not in DTYPES:
        raise KeyError(element)
    return DTYPES[element]


def _unsigned(element: str) -> str:
    return {"i8": "gl.uint8", "i16": "gl.uint16", "i32": "gl.uint32", "i64": "gl.uint64"}[element]


def _attrs(text: str) -> dict[str, str]:
    """``{a = [1, 2], b = #x}`` -> {"a": "[1, 2]", "b": "#x"}: top-level entries of an attribute dict."""
    inner = text.strip()[1:-1] if text.strip().startswith("{") else text
    out, depth, start = {}, 0, 0
    for i, ch in enumerate(inner + ","):
        if ch in "<{([":
            depth += 1
        elif ch in ">})]":
            depth -= 1
        elif ch == "," and depth == 0:
            key, _, value = inner[start:i].partition("=")
            out[key.strip()] = value.strip()
            start = i + 1
    return out


def _inner(body: str) -> str:
    return body[body.index("<") + 1:-1]


def _linear_shape(attrs: dict[str, str]) -> list[int]:
    """The tensor shape a linear layout's bases span (each dimension a power of two)."""
    bases = [b for key in ("register", "lane", "warp", "block") for b in ast.literal_eval(attrs.get(key, "[]"))]
    rank = len(bases[0]) if bases else 1
    return [1 << max((b[d] for b in bases), default=0).bit_length() if bases else 1 for d in range(rank)]


def _rotating_offset_bases(attrs: dict[str, str], shape: list[int]) -> list[list[int]]:
    """The offset bases of ``#ttg.amd_rotating_shared`` for a tile of ``shape`` (its trailing
    dimensions where the allocation has buffers in front), as Triton's
    ``sharedToLinearLayoutAMDRotating`` builds them: a swizzle like ``swizzled_shared``'s whose
    phase is XORed with the block number (``perPhase * maxPhase`` rows a block), every block
    rotating it. Written as ``gl.SharedLinearLayout`` it addresses every element where the
    rotating layout does, and Triton lowers both through that linear layout."""
    vec, per_phase, max_phase = (int(attrs[k]) for k in ("vec", "perPhase", "maxPhase"))
    order = ast.literal_eval(attrs["order"])
    shape = list(shape[-len(order):])
    col, row = order[0], order[1]
    bases = []
    for step in (1 << k for k in range(shape[col].bit_length() - 1)):
        bases.append([step if d == col else 0 for d in range(len(shape))])
    for step in (1 << k for k in range(shape[row].bit_length() - 1)):
        phase = (step // per_phase) % max_phase ^ (step // max_phase // per_phase) % max_phase
        bases.append([step if d == row else (vec * phase) % shape[col] if d == col else 0 for d in range(len(shape))])
    for dim in order[2:]:
        bases += [[1 << k if d == dim else 0 for d in range(len(shape))] for k in range(shape[dim].bit_length() - 1)]
    return bases


@dataclass
class Layouts:
    """The layouts a port names, each once, in an order where parents come first."""
    aliases: dict[str, str]
    imports: set[str] = field(default_factory=set)
    names: dict[str, str] = field(default_factory=dict)      # layout text (+ shape for linear) -> Python name
    defs: list[str] = field(default_factory=list)
    constructors: dict[str, str] = field(default_factory=dict)   # Python name -> its constructor expression

    def name(self, text: str, shape: list[int] | None = None) -> str:
        if "linear<" in self.aliases.get(text, text):   # a linear layout is built for its shape: the one its bases span
            shape = _linear_shape(_attrs(_inner(self.aliases.get(text, text))))
        key = text
        if key in self.names:
            return self.names[key]
        body = self.aliases.get(text, text)
        expr = self._constructor(body, shape)
        base = text[1:].upper() if text in self.aliases else self._inline_name(body)
        name, k = base, 1
        while name in self.names.values():
            k += 1
            name = f"{base}_{k}"
        self.names[key] = name
        self.defs.append(f"{name}: gl.constexpr = {expr}")
        self.constructors[name] = expr
        return name

    def expression(self, name: str) -> str:
        """The layout ``name`` as one Gluon expression, the layouts it is built from spelled out
        (what a caller writes to make a value in it)."""
        return re.sub(r"\b[A-Z][A-Z0-9_]*\b",
                      lambda m: self.expression(m.group()) if m.group() in self.constructors else m.group(),
                      self.constructors[name])

    def _inline_name(self, body: str) -> str:
        kind = re.match(r"#ttg\.(\w+)<", body)
        attrs = _attrs(body[body.index("<") + 1:-1])
        if kind and kind.group(1) == "slice":
            return f"SLICE{attrs['dim']}_{self.name(attrs['parent'])}"
        if kind and kind.group(1) == "dot_op":
            return f"DOT{attrs['opIdx']}_{self.name(attrs['parent'])}"
        return (kind.group(1) if kind else "LAYOUT").upper()

    def _constructor(self, body: str, shape: list[int] | None) -> str:
        kind = re.match(r"#(\w+)\.(\w+)<", body)
        if not kind:
            raise KeyError(body)
        attrs = _attrs(body[body.index("<") + 1:-1])
        which = kind.group(2)
        extra = {k for k in attrs if k.startswith("CTA") or k == "CGALayout"}
        if any(attrs[k] not in ("[1, 1]", "[1]", "[1, 0]", "[0]", "[0, 1]") for k in extra if "Order" not in k):
            raise KeyError(body)
        if which == "blocked":
            return (f"gl.BlockedLayout(size_per_thread={attrs['sizePerThread']}, threads_per_warp="
                    f"{attrs['threadsPerWarp']}, warps_per_cta={attrs['warpsPerCTA']}, order={attrs['order']})")
        if which == "slice":
            return f"gl.SliceLayout({attrs['dim']}, {self.name(attrs['parent'])})"
        if which == "nvidia_mma":
            return (f"gl.NVMMADistributedLayout(version=[{attrs['versionMajor']}, {attrs['versionMinor']}], "
                    f"warps_per_cta={attrs['warpsPerCTA']}, instr_shape={attrs['instrShape']})")
        if which == "dot_op":
            return (f"gl.DotOperandLayout(operand_index={attrs['opIdx']}, parent={self.name(attrs['parent'])}, "
                    f"k_width={attrs.get('kWidth', '0')})")
        if which == "amd_mfma":
            args = (f"version={attrs['version']}, instr_shape={attrs['instrShape']}, "
                    f"transposed={'True' if attrs.get('isTransposed') == 'true' else 'False'}, "
                    f"warps_per_cta={attrs['warpsPerCTA']}")
            if "tilesPerWarp" in attrs:   # printed only when not all ones, Gluon's default
                args += f", tiles_per_warp={attrs['tilesPerWarp']}"
            if "elementBitWidth" in attrs:
                args += f", element_bitwidth={attrs['elementBitWidth']}"
            return f"gl.amd.AMDMFMALayout({args})"
        if which == "linear" and shape is not None:
            return (f"gl.DistributedLinearLayout(reg_bases={attrs.get('register', '[]')}, lane_bases="
                    f"{attrs.get('lane', '[]')}, warp_bases={attrs.get('warp', '[]')}, block_bases="
                    f"{attrs.get('block', '[]')}, shape={shape})")
        if which == "swizzled_shared":
            return (f"gl.SwizzledSharedLayout(vec={attrs['vec']}, per_phase={attrs['perPhase']}, "
                    f"max_phase={attrs['maxPhase']}, order={attrs['order']})")
        if which == "amd_rotating_shared" and shape is not None:   # no Gluon class: the same map, as a linear layout
            return f"gl.SharedLinearLayout(offset_bases={_rotating_offset_bases(attrs, shape)})"
        if which == "nvmma_shared":   # of the tiles: a multi-buffered allocation shares it with its slices
            return (f"gl.NVMMASharedLayout(swizzle_byte_width={attrs['swizzlingByteWidth']}, element_bitwidth="
                    f"{attrs['elementBitWidth']}, rank=2, transposed="
                    f"{'True' if attrs.get('transposed') == 'true' else 'False'})")
        if which == "padded_shared":   # #ttg.padded_shared<[512:+8] {offset = [...], block = []}>
            pairs = [[int(a), int(b)] for a, b in re.findall(r"(\d+):\+(\d+)", body.split("{")[0])]
            rest = _attrs("{" + body.split("{", 1)[1].rsplit("}", 1)[0] + "}")
            offsets = rest.get("offset", "[]")
            return (f"gl.PaddedSharedLayout({pairs}, {offsets}, {rest.get('block', '[]')}, "
                    f"{_linear_shape({'register': offsets})})")
        if which == "tensor_memory_encoding":
            self.imports.add(BLACKWELL.format("TensorMemoryLayout"))
            return (f"TensorMemoryLayout(block=({attrs['blockM']}, {attrs['blockN']}), "
                    f"col_stride={attrs.get('colStride', '1')})")
        raise KeyError(body)


class Emitter:
    """Writes one function's ops as Gluon statements."""

    def __init__(self, module: Module, params: dict[str, str], layouts: Layouts | None = None):
        self.module = module
        self.layouts = layouts or Layouts(module.aliases)
        self.values: dict[str, str] = dict(params)      # SSA value -> Python expression
        self.lines: list[str] = []
        self.entry: list[str] = []                      # the parameters' conversions, before ``lines``
        self.helpers: list[str] = []
        self.imports: set[str] = set()
        self.outputs: dict[int, str] = {}               # sink index -> Python expression
        self.producers: dict[str, Op] = {}              # SSA value -> the op that defined it
        self.handoffs: dict[str, str] = {}              # argument SSA value -> shared layout it is handed over in
        self.converted_on_entry: dict[str, str] = {}    # argument SSA value -> the layout it was converted to on entry
        self.tensormaps: dict[str, Op] = {}             # global scratch SSA value -> the tensormap_create filling it
        self.buffered: frozenset[str] = frozenset()     # pointer tiles accessed as AMD buffer ops where proven
        self.literals: dict[str, tuple] = {}            # scalar constant SSA value -> (Python literal, element)
        self.splats: dict[str, str] = {}                # splat tensor constant SSA value -> its Python literal
        self.counters: dict[str, str] = {}              # loop induction SSA value -> its element type
        self.caller_loads = False                       # loads of parameters as ``hybrid.caller_load``
        self.entered: set[str] = set(params)            # SSA values the parameters enter as
        self._last_line: tuple | None = None
        self._taken = set(params.values())

    # -- names and types ----------------------------------------------------------------------
    def reserve(self, names) -> None:
        """Keep ``names`` (the function's parameters) from the names ``bind`` gives."""
        self._taken.update(names)

    def value(self, ssa: str) -> str:
        return self.values[ssa]

    def receiver(self, ssa: str, op: Op) -> str:
        """``ssa``'s expression as a method's receiver (``x.to(...)``): a scalar constant, written
        as a Python literal where it is used, is made a tensor of its IR type first; so is a loop's
        induction variable, a Python int when the interpreter runs the loop."""
        if ssa in self.counters:   # an int where Python runs the loop, an i32 where Triton does
            made, element = f"gl.to_tensor({self.values[ssa]})", self.counters[ssa]
            return made if element == "i32" else f"{made}.to({self.dtype(element, op)})"
        if ssa in self.literals:
            return _tensor_of(*self.literals[ssa], op, self)
        return self.values[ssa]

    def bind(self, ssa: str, expr: str | None = None, indent: int = 0, name: str | None = None) -> str:
        """A Python name for ``ssa``, from ``name`` where given (assigned ``expr`` when given)."""
        base = name or re.sub(r"\W", "_", ssa.lstrip("%").replace("#", "_").replace("-", "m"))
        base = f"v{base}" if base[0].isdigit() else base
        name, k = base, 1
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        self.values[ssa] = name
        if expr is not None:
            self.lines.append("    " * indent + f"{name} = {expr}")
        return name

    def layout(self, type_text: str, op: Op) -> str:
        ty = TensorType.parse(type_text)
        try:
            return self.layouts.name(ty.layout, ty.shape)
        except KeyError:
            raise Unsupported(op, f"layout {ty.layout} has no Gluon constructor here", self.where(op)) from None

    def dtype(self, element: str, op: Op) -> str:
        try:
            return dtype(element)
        except KeyError:
            raise Unsupported(op, f"element type {element} has no Gluon dtype here", self.where(op)) from None

    def where(self, op: Op) -> Where | None:
        return self.module.locations.get(op.loc)

    # -- blocks -------------------------------------------------------------------------------
    def block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            self._source_comment(op, indent)
            rule = RULES.get(op.name)
            if op.name in SKIPPED:
                continue
            if rule is None:
                raise Unsupported(op, "no Gluon equivalent is written by the port for this op", self.where(op))
            self.producers.update((result, op) for result in op.results)
            try:
                expr = rule(self, op, indent)
            except (KeyError, ValueError, IndexError, AttributeError) as exc:   # a form the rule does not read
                raise Unsupported(op, f"the port does not read this form of it ({type(exc).__name__}: {exc})",
                                  self.where(op)) from exc
            if expr is not None:
                self.bind(op.results[0], expr, indent)

    def _source_comment(self, op: Op, indent: int) -> None:
        where = self.where(op)
        if where is None or (where.file, where.line) == self._last_line:
            return
        self._last_line = (where.file, where.line)
        text = linecache.getline(where.file, where.line).strip()
        if text:
            self.lines.append("    " * indent + f"# {text}")


# -- rules: each returns the expression of the op's (single) result, or None when it wrote statements itself ---------
def _binary(e: Emitter, op: Op, indent: int) -> str:
    a, b = (e.value(v) for v in op.operands[:2])
    return f"{a} {BINARY[op.name]} {b}"


def _unsigned_binary(e: Emitter, op: Op, indent: int) -> str:
    element = TensorType.parse(op.types).element
    u, s = _unsigned(element), dtype(element)
    a, b = (f"{e.receiver(v, op)}.to({u}, bitcast=True)" for v in op.operands[:2])
    return f"({a} {UNSIGNED_BINARY[op.name]} {b}).to({s}, bitcast=True)"


def _compare(e: Emitter, op: Op, indent: int) -> str:
    predicate = op.rest.split(",", 1)[0].strip()
    a, b = (e.value(v) for v in op.operands[:2])
    if predicate in PREDICATES:
        return f"{a} {PREDICATES[predicate]} {b}"
    if predicate in UNSIGNED_PREDICATES:
        u = _unsigned(TensorType.parse(op.types).element)
        a, b = (e.receiver(v, op) for v in op.operands[:2])
        return f"{a}.to({u}, bitcast=True) {UNSIGNED_PREDICATES[predicate]} {b}.to({u}, bitcast=True)"
    raise Unsupported(op, f"comparison predicate {predicate} has no Gluon operator", e.where(op))


def _select(e: Emitter, op: Op, indent: int) -> str:
    c, a, b = (e.value(v) for v in op.operands[:3])
    return f"gl.where({c}, {a}, {b})"


def _call(e: Emitter, op: Op, indent: int) -> str:
    if op.attr("fastmath") not in (None, "#arith.fastmath<none>"):
        raise Unsupported(op, f"fastmath flags {op.attr('fastmath')}", e.where(op))
    return f"{CALLS[op.name]}({', '.join(e.value(v) for v in op.operands)})"


def _cast(e: Emitter, op: Op, indent: int) -> str:
    target = TensorType.parse(op.types.split(" to ")[-1]).element
    source = TensorType.parse(op.types.split(" to ")[0]).element
    x = e.receiver(op.operands[0], op)
    if op.name in ("arith.uitofp", "arith.extui") and source != "i1":
        x = f"{x}.to({_unsigned(source)}, bitcast=True)"
    if op.name == "arith.fptoui":
        return f"{x}.to({_unsigned(target)}).to({e.dtype(target, op)}, bitcast=True)"
    return f"{x}.to({e.dtype(target, op)})"


def _fp_to_fp(e: Emitter, op: Op, indent: int) -> str:
    target = TensorType.parse(op.types.split("->")[-1]).element
    rounding = re.search(r"rounding = (\w+)", op.rest)
    extra = f", fp_downcast_rounding=\"{rounding.group(1)}\"" if rounding else ""
    return f"{e.receiver(op.operands[0], op)}.to({e.dtype(target, op)}{extra})"


def _bitcast(e: Emitter, op: Op, indent: int) -> str:
    target = TensorType.parse(op.types.split(" to ")[-1].split("->")[-1]).element
    return f"{e.receiver(op.operands[0], op)}.to({e.dtype(target, op)}, bitcast=True)"


def _negate(e: Emitter, op: Op, indent: int) -> str:
    return f"-{e.value(op.operands[0])}"


def _constant(e: Emitter, op: Op, indent: int) -> str | None:
    value_text, _, type_text = op.rest.rpartition(" : ")
    if not value_text:   # ``arith.constant true``: an i1 prints no type
        value_text, type_text = op.rest, "i1"
    ty = TensorType.parse(type_text)
    dense = re.match(r"dense<(.*)>$", value_text.strip())
    text = dense.group(1) if dense else value_text.strip()
    bits = _kept_bits(text, ty.element)
    if ty.layout is not None and bits is not None:
        width = sum(LOW_PRECISION[ty.element][:2]) + 1
        return (f"gl.full({ty.shape}, {_signed(bits, width)}, gl.int{width}, layout={e.layout(type_text, op)})"
                f".to({e.dtype(ty.element, op)}, bitcast=True)")
    literal = _literal(text, ty.element, op, e)
    if ty.layout is None and literal.startswith("-") and ty.element.startswith("i"):
        # a negative integer: Triton's IR does not say whether the function had it for unsigned
        # operands, where Gluon refuses a negative Python literal; a tensor of the IR's type is
        # cast to the other operand's signedness as in Triton (the same bits, the same op)
        e.values[op.results[0]] = _tensor_of(literal, ty.element, op, e)
        e.literals[op.results[0]] = (literal, ty.element)   # a constant still: a combine function takes it in
        return None
    if ty.layout is None:
        e.values[op.results[0]] = literal     # a scalar: written where it is used
        e.literals[op.results[0]] = (literal, ty.element)
        return None
    e.splats[op.results[0]] = literal
    return f"gl.full({ty.shape}, {literal}, {e.dtype(ty.element, op)}, layout={e.layout(type_text, op)})"


def _tensor_of(literal: str, element: str, op: Op, e: Emitter) -> str:
    """A scalar constant as a tensor of its IR type (``gl.to_tensor(32).to(gl.int64)``); an fp8
    one as its bits, cast (a constant, where Gluon converts a float at run time)."""
    if element.startswith("f8"):
        bits = encoded(float(literal.replace('float("', "").replace('")', "")), element)
        return f"gl.to_tensor({_signed(bits, 8)}).to(gl.int8).to({e.dtype(element, op)}, bitcast=True)"
    made = f"gl.to_tensor({literal})"
    return made if _python_element(literal) == element else f"{made}.to({e.dtype(element, op)})"


def _python_element(literal: str) -> str:
    """The element type Triton gives a Python literal (``to_tensor``)."""
    if literal in ("True", "False"):
        return "i1"
    if re.fullmatch(r"-?\d+", literal):
        return "i32" if -2**31 <= int(literal) < 2**31 else "ui32" if int(literal) < 2**32 else "i64"
    return "f32"


def _literal(text: str, element: str, op: Op, e: Emitter) -> str:
    if text in ("true", "false"):
        return text.capitalize()
    if text.startswith("0x"):
        bits = int(text, 16)
        if element == "f32":
            value = struct.unpack("<f", struct.pack("<I", bits))[0]
        elif element == "f16":
            value = struct.unpack("<e", struct.pack("<H", bits))[0]
        elif element == "f64":
            value = struct.unpack("<d", struct.pack("<Q", bits))[0]
        elif element in LOW_PRECISION:   # each of its numbers is a float32 one: Gluon makes it back exactly
            value = low_precision(bits, element)
        else:
            raise Unsupported(op, f"constant {text} of {element}", e.where(op))
        return f'float("{value}")' if value != value or value in (float("inf"), float("-inf")) else repr(value)
    if element.startswith("i"):
        return str(int(text))
    return repr(float(text))


#: The float formats below float32 MLIR prints constants of as bits (``0xFF80``, bf16's -inf):
#: exponent bits, mantissa bits, exponent bias, and how infinities and NaNs are spelled
#: ("ieee": all-ones exponent; "fn": no infinity, all ones is NaN; "fnuz": no infinity, NaN is -0).
LOW_PRECISION = {"bf16": (8, 7, 127, "ieee"), "f16": (5, 10, 15, "ieee"), "f8E5M2": (5, 2, 15, "ieee"),
                 "f8E4M3FN": (4, 3, 7, "fn"), "f8E4M3FNUZ": (4, 3, 8, "fnuz"), "f8E5M2FNUZ": (5, 2, 16, "fnuz")}

#: The NaN Gluon makes of ``float("nan")`` in a format (any other keeps its bits through a bitcast).
QUIET_NAN = {"bf16": 0x7FC0, "f16": 0x7E00}


def low_precision(bits: int, element: str) -> float:
    """The value of ``bits`` in the float format ``element`` (a ``LOW_PRECISION`` key)."""
    exponent_bits, mantissa_bits, bias, kind = LOW_PRECISION[element]
    sign = -1.0 if bits >> (exponent_bits + mantissa_bits) & 1 else 1.0
    exponent, mantissa = bits >> mantissa_bits & ((1 << exponent_bits) - 1), bits & ((1 << mantissa_bits) - 1)
    top = (1 << exponent_bits) - 1
    if kind == "fnuz" and bits == 1 << (exponent_bits + mantissa_bits) or \
            kind == "fn" and exponent == top and mantissa == (1 << mantissa_bits) - 1:
        return math.nan
    if kind == "ieee" and exponent == top:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == 0:   # a denormal
        return sign * mantissa * 2.0 ** (1 - bias - mantissa_bits)
    return sign * (1 + mantissa / 2 ** mantissa_bits) * 2.0 ** (exponent - bias)


def encoded(value: float, element: str) -> int:
    """The bits of the number of the 8-bit float format ``element`` nearest ``value`` (MLIR prints
    a constant in decimal only where the decimal reads back as its bits)."""
    values = {bits: low_precision(bits, element) for bits in range(256)}
    if math.isnan(value):
        return next(bits for bits, v in values.items() if math.isnan(v))
    return min((bits for bits, v in values.items() if not math.isnan(v)), key=lambda bits: (
        values[bits] != value, abs(values[bits] - value) if math.isfinite(values[bits]) else math.inf,
        math.copysign(1, values[bits]) != math.copysign(1, value)))


def _kept_bits(text: str, element: str) -> int | None:
    """The bits a tensor constant is written from (a bitcast of integers): an fp8 one's (Gluon
    converts a float to fp8 at run time), a NaN's other than the one Gluon makes of ``float("nan")``."""
    if element.startswith("f8") and element in LOW_PRECISION:
        return int(text, 16) if text.startswith("0x") else encoded(float(text), element)
    if element in LOW_PRECISION and text.startswith("0x") and int(text, 16) != QUIET_NAN.get(element) and \
            math.isnan(low_precision(int(text, 16), element)):
        return int(text, 16)
    return None


def _signed(bits: int, width: int) -> int:
    return bits - (1 << width) if bits >> (width - 1) else bits


def _splat(e: Emitter, op: Op, indent: int) -> str:
    source, result = (t.strip() for t in op.types.split("->"))
    ty = TensorType.parse(result)
    return f"gl.full({ty.shape}, {e.value(op.operands[0])}, {e.dtype(ty.element, op)}, layout={e.layout(result, op)})"


def _broadcast(e: Emitter, op: Op, indent: int) -> str:
    source, result = (TensorType.parse(t) for t in op.types.split("->"))
    expr = f"{e.value(op.operands[0])}.broadcast_to({result.shape})"
    if source.layout == result.layout:
        return expr
    # Triton broadcast into another layout, equivalent on the kept dimensions: Gluon's broadcast
    # keeps its operand's layout, so the vector the operand was expanded from is converted to the
    # slice of the result's layout (free where the two agree) and expanded into it.
    target = e.layout(op.types.split("->")[-1], op)
    expanded = _expansion(e.producers.get(op.operands[0]))
    if expanded is not None:
        vector, axis = e.value(expanded[0]), expanded[1]
        return (f"gl.expand_dims(gl.convert_layout({vector}, gl.SliceLayout({axis}, {target})), {axis})"
                f".broadcast_to({result.shape})")
    # into a linear layout (made for the result's shape): only where the operand is already placed so
    trivial = ", assert_trivial=True" if "linear<" in e.module.aliases.get(result.layout, result.layout) else ""
    return f"gl.convert_layout({e.value(op.operands[0])}, {target}{trivial}).broadcast_to({result.shape})"


def _expand_dims(e: Emitter, op: Op, indent: int) -> str:
    axis = op.attr("axis").split(":")[0].strip()
    source, result = (TensorType.parse(t) for t in op.types.split("->"))
    value = e.value(op.operands[0])
    if not (source.layout or "").startswith("#ttg.slice<"):   # Triton infers the result; Gluon wants the slice
        value = f"gl.convert_layout({value}, gl.SliceLayout({axis}, {e.layout(op.types.split('->')[-1], op)}))"
    return f"gl.expand_dims({value}, {axis})"


def _make_range(e: Emitter, op: Op, indent: int) -> str:
    start, end = (op.attr(k).split(":")[0].strip() for k in ("start", "end"))
    return f"gl.arange({start}, {end}, layout={e.layout(op.types, op)})"


def _addptr(e: Emitter, op: Op, indent: int) -> str:
    return f"{e.value(op.operands[0])} + {e.value(op.operands[1])}"


def _memory_kwargs(e: Emitter, op: Op) -> str:
    kwargs = ""
    cache = re.search(r"cacheModifier = (\w+)", op.rest)
    if cache and cache.group(1) != "none":
        kwargs += f", cache_modifier=\"{CACHE[cache.group(1)]}\""
    evict = re.search(r"evictionPolicy = (\w+)", op.rest)
    if evict and evict.group(1) != "evict_normal":
        kwargs += f", eviction_policy=\"{evict.group(1)}\""
    if "isVolatile = true" in op.rest:
        kwargs += ", volatile=True"
    return kwargs


def _mask(expr: str | None) -> str:
    """``, mask=...``, left out where the IR's mask is the constant true."""
    return "" if expr in (None, "True") else f", mask={expr}"


def _load(e: Emitter, op: Op, indent: int) -> str:
    operands = [e.value(v) for v in op.operands]
    mask = _mask(operands[1] if len(operands) > 1 else None)
    other = op.operands[2] if len(op.operands) > 2 else None
    if e.caller_loads and indent == 1 and not _memory_kwargs(e, op) and (other is None or other in e.splats) \
            and _entered(e, op.operands[0]) and (not mask or _entered(e, op.operands[1])):
        # the kernel's loop pipelined this load of its parameters: its Triton caller can issue it
        # before the call, where that loop pipelines it again (``hybrid.caller_load``)
        e.imports.add("import hybrid")
        return f"hybrid.caller_load({operands[0]}{mask}{f', other={e.splats[other]}' if other else ''})"
    kwargs = mask + (f", other={operands[2]}" if other else "")
    return f"{_access(e, op, 'load')}({operands[0]}{kwargs}{_memory_kwargs(e, op)})"


def _entered(e: Emitter, ssa: str) -> bool:
    """Whether ``ssa`` is a parameter of the port as it entered (perhaps converted)."""
    while ssa not in e.entered and ssa in e.producers and e.producers[ssa].name == "ttg.convert_layout":
        ssa = e.producers[ssa].operands[0]
    return ssa in e.entered


def _store(e: Emitter, op: Op, indent: int) -> None:
    operands = [e.value(v) for v in op.operands]
    mask = _mask(operands[2] if len(operands) > 2 else None)
    e.lines.append("    " * indent + f"{_access(e, op, 'store')}({operands[0]}, {operands[1]}{mask}"
                                     f"{_memory_kwargs(e, op)})")


def _access(e: Emitter, op: Op, kind: str) -> str:
    """``gl.load``/``gl.store``, or hybrid's AMD buffer access of a tile the kernel had one of."""
    if op.operands[0] not in e.buffered:
        return f"gl.{kind}"
    e.imports.add("import hybrid")
    return f"hybrid.amd.buffer_{kind}"


def _program_id(e: Emitter, op: Op, indent: int) -> str:
    axis = op.rest.split()[0]
    return f"gl.{'program_id' if op.name == 'tt.get_program_id' else 'num_programs'}({AXES[axis]})"


def _convert_layout(e: Emitter, op: Op, indent: int) -> str | None:
    source, target = op.operands[0], e.layout(op.types.split('->')[-1], op)
    if e.converted_on_entry.get(source) == TensorType.parse(op.types.split("->")[-1]).layout:
        e.values[op.results[0]] = e.value(source)   # an argument the port converted straight to this layout
        return None
    if source in e.handoffs:   # an argument the kernel hands over through shared memory: the port does the same
        ty = TensorType.parse(op.types.split("->")[0])
        shared = e.layouts.name(e.handoffs[source], ty.shape)
        return (f"gl.allocate_shared_memory({e.dtype(ty.element, op)}, {ty.shape}, {shared}, "
                f"value={e.value(source)}).load({target})")
    return f"gl.convert_layout({e.value(source)}, {target})"


def _combine_function(e: Emitter, op: Op, name: str) -> str:
    """The reduce/scan combine region as a ``@gluon.jit`` function of its own. A scalar constant
    it uses that Triton hoisted out of the region is written in as the literal it is."""
    inner = Emitter(e.module, {}, e.layouts)
    params = [inner.bind(arg) for arg, _ in op.regions[0].args]
    ops = list(op.regions[0].ops)
    ret = ops.pop()
    for v in used_from_outside(Block([], [*ops, ret]), {arg for arg, _ in op.regions[0].args}):
        if v not in e.literals:
            raise Unsupported(op, f"its combine function uses {v}, a value made outside it", e.where(op))
        inner.values[v], inner.literals[v] = e.values[v], e.literals[v]
    inner.block(Block([], ops), 1)
    returned = ", ".join(inner.value(v) for v in ret.operands)
    lines = ["@gluon.jit", f"def {name}({', '.join(params)}):", *inner.lines, f"    return {returned}"]
    e.helpers.append("\n".join(lines))
    return name


def _reduce(e: Emitter, op: Op, indent: int) -> None:
    axis = op.attr("axis").split(":")[0].strip()
    fn = _combine_function(e, op, f"combine_{e.bind(op.results[0] + '_fn')}")
    inputs = [e.value(v) for v in op.operands]
    if op.name == "tt.scan":
        reverse = ", reverse=True" if op.attr("reverse") == "true" else ""
        call = f"gl.associative_scan({_tuple(inputs)}, {axis}, {fn}{reverse})"
    else:
        call = f"gl.reduce({_tuple(inputs)}, {axis}, {fn})"
    names = [e.bind(r) for r in op.results]
    e.lines.append("    " * indent + f"{', '.join(names)} = {call}")


def _tuple(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"({', '.join(items)})"


def _atomic_rmw(e: Emitter, op: Op, indent: int) -> str:
    kind, sem, scope = (part.strip() for part in op.rest.split(",")[:3])
    if kind not in RMW:
        raise Unsupported(op, f"atomic {kind} has no Gluon call here", e.where(op))
    operands = [e.value(v) for v in op.operands]
    mask = _mask(operands[2] if len(operands) > 2 else None)
    return f"{RMW[kind]}({operands[0]}, {operands[1]}{mask}, sem=\"{sem}\", scope=\"{scope}\")"


def _atomic_cas(e: Emitter, op: Op, indent: int) -> str:
    sem, scope = (part.strip() for part in op.rest.split(",")[:2])
    p, c, v = (e.value(x) for x in op.operands[:3])
    return f"gl.atomic_cas({p}, {c}, {v}, sem=\"{sem}\", scope=\"{scope}\")"


def _inline_asm(e: Emitter, op: Op, indent: int) -> None:
    """The region's markers: ``hybrid.enable`` guards the result sinks (``hybrid.out.<j>``)."""
    marker = re.match(r'"hybrid\.(enable|out\.(\d+))"', op.rest)
    if marker is None:
        raise Unsupported(op, "inline assembly is not written by the port", e.where(op))
    if marker.group(2) is not None:
        e.outputs[int(marker.group(2))] = e.value(op.operands[0])
    else:
        e.values[op.results[0]] = "<enable>"


def _for(e: Emitter, op: Op, indent: int) -> None:
    head = re.match(r"(%[\w$.\-]+) = (%[\w$.\-#]+) to (%[\w$.\-#]+) step (%[\w$.\-#]+)", op.rest)
    iv, lb, ub, step = head.group(1), *(e.value(v) for v in head.group(2, 3, 4))
    carried = op.carried
    kept = [k for k, (_, init) in enumerate(carried) if e.values.get(init) != "None"]   # async tokens: dropped
    ops = list(op.regions[0].ops)
    # a loop that carries nothing prints no scf.yield: its last op is the body's own
    yielded = ops.pop() if ops and ops[-1].name == "scf.yield" else Op("scf.yield", [], "", "")
    # An async wgmma's result is a warpgroup_mma_accumulator in Gluon: a value the loop carries from
    # one (a pipelined dot's accumulator) starts as one too.
    async_dots = {r for o in ops if o.name == "ttng.warp_group_dot" and o.attr("isAsync") == "true" for r in o.results}
    for k, (arg, init) in enumerate(carried):
        if k in kept and yielded.operands[k] in async_dots:
            e.imports.add(HOPPER.format("warpgroup_mma_init"))
            e.bind(arg, f"warpgroup_mma_init({e.value(init)})", indent)
        elif k in kept:
            e.bind(arg, e.value(init), indent)
        else:
            e.values[arg] = "None"
    e.counters[iv] = re.search(r" : (\w+)$", op.rest).group(1)   # (the ``->`` before it defeats ``types``)
    e.lines.append("    " * indent + f"for {e.bind(iv)} in range({lb}, {ub}, {step}):")
    e.block(Block([], ops), indent + 1)
    targets = [e.values[carried[k][0]] for k in kept]
    values = [e.value(yielded.operands[k]) for k in kept]
    if targets:
        e.lines.append("    " * (indent + 1) + f"{', '.join(targets)} = {', '.join(values)}")
    elif not ops:
        e.lines.append("    " * (indent + 1) + "pass")
    for k, result in enumerate(op.results):
        e.values[result] = e.values[carried[k][0]]


def _branch(e: Emitter, op: Op, indent: int) -> None:
    """An early ``return`` (``if c: ...; return`` in a kernel), which Triton builds as a branch to
    two blocks that each end the function (``ttgir_text`` gives them as the op's regions): written
    back so, it builds to the same branch."""
    if op.name != "cf.cond_br" or len(op.regions) != 2 or not all(map(_ends_function, op.regions)):
        raise Unsupported(op, "unstructured control flow (a branch other than an early return with no value, from "
                              "a loop's break, say) is not written by the port", e.where(op))
    then, rest = op.regions
    e.lines.append("    " * indent + f"if {e.value(op.operands[0])}:")
    e.block(then, indent + 1)
    e.lines.append("    " * (indent + 1) + "return")
    e.block(rest, indent)


def _ends_function(block: Block) -> bool:
    last = block.ops[-1] if block.ops else None
    return last is not None and (last.name == "tt.return" and not last.operands or
                                 last.name == "cf.cond_br" and bool(last.regions))


def _while(e: Emitter, op: Op, indent: int) -> None:
    """A ``while`` loop as Triton's code generator makes it: its first region evaluates the
    condition (an atomic a lock spins on, say) and forwards the loop's values to the body
    unchanged. The condition's ops become a ``@gluon.jit`` function the ``while`` calls, with the
    loop's values and whatever else they use as its parameters."""
    carried = op.carried
    before, after = op.regions
    ops = list(before.ops)
    condition = ops.pop()
    if condition.name != "scf.condition" or condition.operands[1:] != [arg for arg, _ in carried] \
            or len(after.args) != len(carried):
        raise Unsupported(op, "a while loop whose condition forwards other values than the loop's own", e.where(op))
    names = [e.bind(arg, e.value(init), indent) for arg, init in carried]
    inner = Emitter(e.module, {}, e.layouts)
    inner.imports, inner.helpers = e.imports, e.helpers
    params = [inner.bind(arg) for arg, _ in carried]
    captured = []   # what the condition uses from outside: a parameter named as outside, a literal written in
    for v in used_from_outside(Block([], ops + [condition]), {arg for arg, _ in carried}):
        outside = e.value(v)
        if _LITERAL.fullmatch(outside):
            inner.values[v] = outside
        else:
            captured.append(v)
            params.append(inner.bind(v, name=outside if outside.isidentifier() else None))
    inner.block(Block([], ops), 1)
    helper = f"while_condition_{len(e.helpers)}"
    e.helpers.append("\n".join(["@gluon.jit", f"def {helper}({', '.join(params)}):", *inner.lines,
                                f"    return {inner.value(condition.operands[0])}"]))
    e.lines.append("    " * indent + f"while {helper}({', '.join(names + [e.value(v) for v in captured])}):")
    body = list(after.ops)
    yielded = body.pop() if body and body[-1].name == "scf.yield" else Op("scf.yield", [], "", "")
    for (arg, _), name in zip(after.args, names):
        e.values[arg] = name
    e.block(Block([], body), indent + 1)
    if names:
        e.lines.append("    " * (indent + 1) + f"{', '.join(names)} = {', '.join(e.value(v) for v in yielded.operands)}")
    elif not body:
        e.lines.append("    " * (indent + 1) + "pass")
    for result, name in zip(op.results, names):
        e.values[result] = name


#: A number as the port writes a scalar constant.
_LITERAL = re.compile(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)|float\('-?(?:inf|nan)'\)|True|False")


def _barrier_all(e: Emitter, op: Op, indent: int) -> None:
    """``tl.debug_barrier``: every thread of the CTA."""
    if op.name == "ttg.barrier" and op.rest.split()[:1] != ["all"]:
        raise Unsupported(op, f"a barrier of {op.rest.split()[0] if op.rest else '?'} only", e.where(op))
    e.lines.append("    " * indent + f"gl.{compat.gluon_barrier().__name__}()")


def _if(e: Emitter, op: Op, indent: int) -> None:
    condition = e.value(op.operands[0])
    if condition == "<enable>":   # the sinks: the region's results
        e.block(op.regions[0], indent)
        return
    names = [e.bind(r) for r in op.results]
    for k, region in enumerate(op.regions):
        e.lines.append("    " * indent + (f"if {condition}:" if k == 0 else "else:"))
        ops = list(region.ops)
        yielded = ops.pop() if ops and ops[-1].name == "scf.yield" else None
        e.block(Block([], ops), indent + 1)
        if names and yielded is not None:
            e.lines.append("    " * (indent + 1) + f"{', '.join(names)} = "
                                                  f"{', '.join(e.value(v) for v in yielded.operands)}")
        elif not ops:
            e.lines.append("    " * (indent + 1) + "pass")


# -- shared memory, async copies and MMA (the operand staging Triton chose) ------------------------------------------
def _local_alloc(e: Emitter, op: Op, indent: int) -> str:
    result = op.types.split("->")[-1].strip()
    ty = TensorType.parse(result)
    layout = e.layouts.name(ty.layout, ty.shape) if ty.layout else None
    if layout is None:
        raise Unsupported(op, f"shared memory type {result}", e.where(op))
    value = f", {e.value(op.operands[0])}" if op.operands else ""
    return f"gl.allocate_shared_memory({e.dtype(ty.element, op)}, {ty.shape}, {layout}{value})"


def _memdesc_index(e: Emitter, op: Op, indent: int) -> str:
    buffer, index = (e.value(v) for v in op.operands[:2])
    return f"{buffer}.index({index})"


def _memdesc_subslice(e: Emitter, op: Op, indent: int) -> str:
    offsets = [int(v) for v in re.search(r"\[([\d, ]+)\]", op.rest).group(1).split(",")]
    source, result = (TensorType.parse(t) for t in op.types.split("->"))
    dims = [d for d, (a, b) in enumerate(zip(source.shape, result.shape)) if a != b]
    if len(dims) != 1 or any(offsets[d] for d in range(len(offsets)) if d not in dims):
        raise Unsupported(op, "a subslice along more than one dimension", e.where(op))
    d = dims[0]
    return f"{e.value(op.operands[0])}.slice({offsets[d]}, {result.shape[d]}, dim={d})"


def _local_load(e: Emitter, op: Op, indent: int) -> str:
    return f"{e.value(op.operands[0])}.load({e.layout(op.types.split('->')[-1], op)})"


def _local_store(e: Emitter, op: Op, indent: int) -> None:
    value, buffer = (e.value(v) for v in op.operands[:2])
    e.lines.append("    " * indent + f"{buffer}.store({value})")


def _async_copy(e: Emitter, op: Op, indent: int) -> None:
    """cp.async zero-fills masked elements, so on NVIDIA the copy's ``other`` (zeros) is implied; an
    AMD direct-to-LDS copy writes masked elements only with it, so there the port passes it on
    (CDNA4's ``global_load_to_shared``)."""
    e.imports.add("from triton.experimental.gluon.language.nvidia.ampere import async_copy")
    ptr, buffer = (e.value(v) for v in op.operands[:2])
    named = dict(re.findall(r"\b(mask|other) (%[\w$.\-]+(?:#\d+)?)", signature_split(" " + op.rest)[0]))
    mask = _mask(e.value(named["mask"]) if "mask" in named else None)
    if e.module.target.startswith("hip:"):
        e.imports.add("from triton.experimental.gluon.language.amd.cdna4 import async_copy as cdna4_async_copy")
        other = f", other={e.value(named['other'])}" if "other" in named else ""
        e.lines.append("    " * indent + f"cdna4_async_copy.global_load_to_shared({buffer}, {ptr}{mask}{other})")
    else:
        copy = compat.gluon_async_copy().__name__   # the installed Triton's name for cp.async
        e.lines.append("    " * indent + f"async_copy.{copy}({buffer}, {ptr}{mask})")
    e.values[op.results[0]] = "None"


def _commit_group(e: Emitter, op: Op, indent: int) -> None:
    e.lines.append("    " * indent + "async_copy.commit_group()")
    e.values[op.results[0]] = "None"


def _async_wait(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add("from triton.experimental.gluon.language.nvidia.ampere import async_copy")
    e.lines.append("    " * indent + f"async_copy.wait_group({op.attr('num').split(':')[0].strip()})")
    e.values[op.results[0]] = "None"


def _dot(e: Emitter, op: Op, indent: int) -> str:
    a, b, c = (e.value(v) for v in op.operands[:3])
    result = e.module.aliases.get(TensorType.parse(op.types.split("->")[-1]).layout or "", "")
    if "nvidia_mma" in result and "versionMajor = 2" in result:
        e.imports.add("from triton.experimental.gluon.language.nvidia.ampere import mma_v2")
        precision = re.search(r"inputPrecision = (\w+)", op.rest)
        extra = f", input_precision=\"{precision.group(1)}\"" if precision else ""
        return f"mma_v2({a}, {b}, {c}{extra})"
    if "amd_mfma" in result:
        precision = (re.search(r"inputPrecision = (\w+)", op.rest) or [None, "ieee"])[1]
        if TensorType.parse(op.types.split(" * ")[0]).element == "f32" and precision != "ieee":
            e.imports.add("import hybrid")   # Gluon's mfma builds the IEEE one: another MFMA, another layout
            return f"hybrid.amd.mfma({a}, {b}, {c}, input_precision=\"{precision}\")"
        cdna = "cdna4" if "version = 4" in result else "cdna3"
        e.imports.add(f"from triton.experimental.gluon.language.amd.{cdna} import mfma")
        return f"mfma({a}, {b}, {c})"
    raise Unsupported(op, f"tl.dot into {result or 'this layout'} has no Gluon MMA written by the port yet",
                      e.where(op))


def _in_thread_transpose(e: Emitter, op: Op, indent: int) -> str:
    """AMD's register transpose before a shared-memory store: each element stays in the thread that
    holds it, only its register moves, which is what a conversion between the two layouts lowers to."""
    return f"gl.convert_layout({e.value(op.operands[0])}, {e.layout(op.types.split('->')[-1], op)})"


def _fence_async_shared(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add(HOPPER.format("fence_async_shared"))
    cluster = "cluster=True" if op.attr("bCluster") == "true" else ""
    e.lines.append("    " * indent + f"fence_async_shared({cluster})")


def _setprio(e: Emitter, op: Op, indent: int) -> None:
    """The priority Triton's AMD ping-pong schedule gives a warp around its loads and MFMAs."""
    e.imports.add("import hybrid")
    e.lines.append("    " * indent + f"hybrid.amd.setprio({op.rest.split()[0]})")


def _sched_barrier(e: Emitter, op: Op, indent: int) -> None:
    """A fence for LLVM's scheduler, with the instruction classes that may cross it."""
    e.imports.add("import hybrid")
    allowed = ", ".join(f'"{name}"' for name in classes_of(op.rest.split()[0]))
    e.lines.append("    " * indent + f"hybrid.amd.sched_barrier({allowed})")


def _warp_group_dot(e: Emitter, op: Op, indent: int) -> str:
    e.imports.add(HOPPER.format("warpgroup_mma"))
    operands = [e.value(v) for v in op.operands]
    if (op.attr("inputPrecision") or "0 ").split(":")[0].strip() != "0":
        raise Unsupported(op, f"input precision {op.attr('inputPrecision')}", e.where(op))
    kwargs = f", use_acc={operands[3]}" if len(operands) > 3 else ""
    imprecise = (op.attr("maxNumImpreciseAcc") or "0").split(":")[0].strip()
    if imprecise != "0":
        kwargs += f", max_num_imprecise_acc={imprecise}"
    if op.attr("isAsync") == "true":
        kwargs += ", is_async=True"
    return f"warpgroup_mma({operands[0]}, {operands[1]}, {operands[2]}{kwargs})"


def _warp_group_dot_wait(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add(HOPPER.format("warpgroup_mma_wait"))
    deps = ", ".join(e.value(v) for v in op.operands)
    names = [e.bind(r) for r in op.results]
    pendings = op.attr("pendings").split(":")[0].strip()
    e.lines.append("    " * indent + f"{', '.join(names)} = warpgroup_mma_wait({pendings}, deps=[{deps}])")


def _tmem_alloc(e: Emitter, op: Op, indent: int) -> str:
    e.imports.add(BLACKWELL.format("allocate_tensor_memory"))
    ty = TensorType.parse(op.types.split("->")[-1])
    value = f", value={e.value(op.operands[0])}" if op.operands else ""
    return (f"allocate_tensor_memory({e.dtype(ty.element, op)}, {ty.shape}, "
            f"{e.layouts.name(ty.layout, ty.shape)}{value})")


def _tmem_store(e: Emitter, op: Op, indent: int) -> None:
    value, memory, *pred = (e.value(v) for v in op.operands)
    e.lines.append("    " * indent + f"{memory}.store({value}{f', pred={pred[0]}' if pred else ''})")


def _tmem_load(e: Emitter, op: Op, indent: int) -> str:
    return f"{e.value(op.operands[0])}.load({e.layout(op.types.split('->')[-1], op)})"


def _barrier(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add(BLACKWELL.format("mbarrier"))
    operands = [e.value(v) for v in op.operands]
    if op.name == "ttng.init_barrier":
        count = re.match(r"%[\w$.\-#]+, (\d+)", op.rest).group(1)
        call = f"mbarrier.init({operands[0]}, count={count})"
    elif op.name == "ttng.inval_barrier":
        call = f"mbarrier.invalidate({operands[0]})"
    else:   # wait_barrier %bar, %phase[, %pred] deps ...
        before = len(re.findall(r"%[\w$.\-]+(?:#\d+)?", op.rest.split(" deps ")[0]))
        pred = f", pred={operands[2]}" if before > 2 else ""
        deps = f", deps=[{', '.join(operands[before:])}]" if len(operands) > before else ""
        call = f"mbarrier.wait({operands[0]}, {operands[1]}{pred}{deps})"
    e.lines.append("    " * indent + call)


def _tcgen05_mma(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add(BLACKWELL.format("tcgen05_mma"))
    if "two_ctas" in op.rest:
        raise Unsupported(op, "a two-CTA MMA", e.where(op))
    a, b, acc, use_acc, pred, *barriers = (e.value(v) for v in op.operands)
    kwargs = f"use_acc={use_acc}, pred={pred}"
    if barriers:
        kwargs += f", mbarriers=[{', '.join(barriers[0::2])}], mbarrier_preds=[{', '.join(barriers[1::2])}]"
    e.lines.append("    " * indent + f"tcgen05_mma({a}, {b}, {acc}, {kwargs})")



# -- tensor descriptors as TMA (device-made descriptors, async copies through them) -----------------------------------
# Triton lowers ``tl.make_tensor_descriptor`` into four ops (a global scratch buffer, the tensormap
# written into it, a proxy fence, the buffer read as a descriptor); Gluon's
# ``tma.make_tensor_descriptor`` lowers into the same four, so the port writes the one call for them.
_TMA_FILL = {"0": "zero", "1": "nan"}


def _global_scratch(e: Emitter, op: Op, indent: int) -> None:
    """A tensormap's storage: written by the descriptor call its ``reinterpret`` becomes."""
    e.values[op.results[0]] = f"<tensormap {op.results[0]}>"


def _tensormap_create(e: Emitter, op: Op, indent: int) -> None:
    if op.operands[0] not in e.values or not e.value(op.operands[0]).startswith("<tensormap"):
        raise Unsupported(op, "a tensormap written into memory other than its own global scratch", e.where(op))
    e.tensormaps[op.operands[0]] = op


def _tensormap_fence(e: Emitter, op: Op, indent: int) -> None:
    if op.operands[0] not in e.tensormaps:
        raise Unsupported(op, "a proxy fence of a tensormap the port did not write", e.where(op))


def _reinterpret_descriptor(e: Emitter, op: Op, indent: int) -> str:
    """``tma.make_tensor_descriptor(base, shape, strides, block_shape, layout)`` from the tensormap's
    operands: its dimensions and byte strides are innermost first, the strides the element strides
    scaled by the element's size (the scaling is the lowering's own: the port passes what was scaled)."""
    created = e.tensormaps.get(op.operands[0])
    if created is None:
        raise Unsupported(op, "a descriptor read from memory the port did not write a tensormap into", e.where(op))
    desc = re.match(r"!tt\.tensordesc<(?:tensor<)?([\dx]+)x(\w+), (#[\w.]+(?:<[^>]*>)?)>",   # (3.6: tensor<...>)
                    op.types.split(" to ")[-1].strip())
    block = [int(d) for d in desc.group(1).split("x")]
    element_bytes = int(re.search(r"\d+", desc.group(2)).group()) // 8
    groups = [re.findall(r"%[\w$.\-]+(?:#\d+)?", g) for g in re.findall(r"\[([^\]]*)\]", created.rest.split(" : ")[0])]
    _, dims, byte_strides, element_strides = groups   # (the box: the block, split at the swizzle width)
    attrs = _attrs(re.search(r"\{[^}]*\}", created.rest).group(0))
    fill = _TMA_FILL.get(attrs.get("fill_mode", "0").split(":")[0].strip())
    if (attrs.get("interleave_layout", "0").split(":")[0].strip() != "0" or fill is None
            or any(e.value(v) != "1" for v in element_strides)):
        raise Unsupported(created, "a tensormap with interleaving, element strides or a fill that "
                                   "tma.make_tensor_descriptor does not write", e.where(created))
    strides = [_element_stride(e, created, v, element_bytes) for v in reversed(byte_strides)] + ["1"]
    base = e.value(created.operands[1])
    e.imports.add(HOPPER.format("tma"))
    padding = f", padding_option=\"{fill}\"" if fill != "zero" else ""
    return (f"tma.make_tensor_descriptor({base}, [{', '.join(e.value(v) for v in reversed(dims))}], "
            f"[{', '.join(strides)}], {block}, {e.layouts.name(desc.group(3), block)}{padding})")


def _element_stride(e: Emitter, op: Op, ssa: str, element_bytes: int) -> str:
    """The element stride whose byte stride ``ssa`` is: the operand the lowering scaled (``x *
    element_bytes``), or a constant divided by it."""
    scaled = e.producers.get(ssa)
    if scaled is not None and scaled.name == "arith.muli" and e.value(scaled.operands[1]) == str(element_bytes):
        return e.value(scaled.operands[0])
    if e.value(ssa).isdigit() and int(e.value(ssa)) % element_bytes == 0:
        return str(int(e.value(ssa)) // element_bytes)
    raise Unsupported(op, f"a byte stride ({e.value(ssa)}) that is not an element stride times {element_bytes}",
                      e.where(op))


def _coordinates(op: Op) -> tuple[str, list[str], list[str]]:
    """``%desc[%x, %y] rest...``: the descriptor, its coordinates and the operands after them."""
    found = re.match(r"(%[\w$.\-#]+)\[([^\]]*)\]\s*(.*)", op.rest)
    coords = re.findall(r"%[\w$.\-]+(?:#\d+)?", found.group(2))
    rest = re.findall(r"%[\w$.\-]+(?:#\d+)?", signature_split(" " + found.group(3))[0])
    return found.group(1), coords, rest


def _tma_load(e: Emitter, op: Op, indent: int) -> None:
    if re.search(r"\{[^}]*\}", signature_split(" " + op.rest)[0]):
        raise Unsupported(op, "a TMA load with a cache policy, eviction or multicast attribute", e.where(op))
    desc, coords, (buffer, barrier, *pred) = _coordinates(op)
    load, _ = compat.gluon_tma_copies()
    e.imports.add(HOPPER.format("tma"))
    pred_kw = f", pred={e.value(pred[0])}" if pred and e.value(pred[0]) != "True" else ""
    e.lines.append("    " * indent + f"tma.{load.__name__}({e.value(desc)}, [{', '.join(e.value(c) for c in coords)}], "
                                     f"{e.value(barrier)}, {e.value(buffer)}{pred_kw})")


def _tma_store(e: Emitter, op: Op, indent: int) -> None:
    if re.search(r"\{[^}]*\}", signature_split(" " + op.rest)[0]):
        raise Unsupported(op, "a TMA store with a cache policy or reduction attribute", e.where(op))
    desc, coords, (buffer, *extra) = _coordinates(op)
    if extra:
        raise Unsupported(op, "a TMA store with a predicate or token", e.where(op))
    _, store = compat.gluon_tma_copies()
    e.imports.add(HOPPER.format("tma"))
    e.lines.append("    " * indent + f"tma.{store.__name__}({e.value(desc)}, [{', '.join(e.value(c) for c in coords)}], "
                                     f"{e.value(buffer)})")


def _tma_store_wait(e: Emitter, op: Op, indent: int) -> None:
    """``store_wait(n)`` waits only for the stores' reads of shared memory by default (``read_only``)."""
    e.imports.add(HOPPER.format("tma"))
    pendings = op.attr("pendings").split(":")[0].strip()
    read_only = "" if re.search(r"\bread_only\b", op.rest) or not compat.STORE_WAIT_READ_ONLY else ", read_only=False"
    e.lines.append("    " * indent + f"tma.store_wait({pendings}{read_only})")


def _barrier_expect(e: Emitter, op: Op, indent: int) -> None:
    e.imports.add(BLACKWELL.format("mbarrier"))
    found = re.match(r"(%[\w$.\-#]+), (\d+)(?:, (%[\w$.\-#]+))?", op.rest)
    pred = e.value(found.group(3)) if found.group(3) else "True"
    e.lines.append("    " * indent + f"mbarrier.expect({e.value(found.group(1))}, {found.group(2)}"
                                     f"{f', pred={pred}' if pred != 'True' else ''})")


def _memdesc_trans(e: Emitter, op: Op, indent: int) -> str:
    order = re.search(r"order = array<i32: ([\d, ]+)>", op.rest).group(1)
    return f"{e.value(op.operands[0])}.permute([{order}])"


def _trans(e: Emitter, op: Op, indent: int) -> str:
    """Gluon's permute infers its result's layout; a conversion to the layout Triton gave it
    (the same placement where Triton inferred it too) keeps the types the IR has."""
    order = re.search(r"order = array<i32: ([\d, ]+)>", op.rest).group(1)
    return f"gl.convert_layout(gl.permute({e.value(op.operands[0])}, [{order}]), " \
           f"{e.layout(op.types.split('->')[-1], op)}, assert_trivial=True)"


def _join(e: Emitter, op: Op, indent: int) -> str:
    """``tl.join``: Gluon's join infers its result's layout, as Triton's op does; the conversion to
    the IR's layout is asserted to move nothing."""
    return f"gl.convert_layout(gl.join({e.value(op.operands[0])}, {e.value(op.operands[1])}), " \
           f"{e.layout(op.types.split('->')[-1], op)}, assert_trivial=True)"


def _split(e: Emitter, op: Op, indent: int) -> None:
    """``tl.split``: both halves, each in the layout the IR gives it (as Gluon's split infers it)."""
    layout = e.layout(op.types.split("->")[-1], op)
    names = [e.bind(r) for r in op.results]
    e.lines.append("    " * indent + f"{', '.join(names)} = gl.split({e.value(op.operands[0])})")
    for name in names:
        e.lines.append("    " * indent + f"{name} = gl.convert_layout({name}, {layout}, assert_trivial=True)")


def _expansion(op: Op | None) -> tuple[str, int] | None:
    """(the vector, the axis) where ``op`` adds a unit dimension to a vector in a slice of its
    result's layout: ``tt.expand_dims``, or a ``tt.reshape`` that does only that (Triton's
    descriptor loads lowered to pointers reshape their offsets so)."""
    if op is None or op.name not in ("tt.expand_dims", "tt.reshape"):
        return None
    if op.name == "tt.expand_dims":
        return op.operands[0], int(op.attr("axis").split(":")[0].strip())
    if "allow_reorder" in op.rest or "efficient_layout" in op.rest:
        return None
    source, result = (TensorType.parse(t) for t in op.types.split("->"))
    sliced = re.match(r"#ttg\.slice<\{dim = (\d+), parent = (#\w+)\}>$", source.layout or "")
    if sliced and sliced.group(2) == result.layout:
        axis = int(sliced.group(1))
        if result.shape == source.shape[:axis] + [1] + source.shape[axis:]:
            return op.operands[0], axis
    return None


def _reshape(e: Emitter, op: Op, indent: int) -> str:
    """A reshape that only adds a unit dimension to a slice of its result's layout is
    ``expand_dims`` (the same placement); any other is Gluon's reshape converted to the IR's layout.
    One to its own type (``tl.max`` of a 1-D tensor flattens it) is the value itself."""
    source, result = (t.strip() for t in op.types.split("->"))
    if source == result:
        return e.value(op.operands[0])
    if "allow_reorder" in op.rest or "efficient_layout" in op.rest:
        raise Unsupported(op, "a reshape that may reorder elements", e.where(op))
    expanded = _expansion(op)
    if expanded is not None:
        return f"gl.expand_dims({e.value(expanded[0])}, {expanded[1]})"
    result = TensorType.parse(op.types.split("->")[-1])
    return f"gl.convert_layout(gl.reshape({e.value(op.operands[0])}, {result.shape}), " \
           f"{e.layout(op.types.split('->')[-1], op)}, assert_trivial=True)"

def _buffer_access(e: Emitter, op: Op, indent: int) -> str | None:
    """AMD buffer loads and stores: a scalar base pointer and a tensor of offsets."""
    e.imports.add("from triton.experimental.gluon.language.amd.cdna3 import buffer_load, buffer_store")
    if "stride = " in op.rest:
        raise Unsupported(op, "a buffer access with a stride operand", e.where(op))
    operands = [e.value(v) for v in op.operands]
    cache = re.search(r"cacheModifier = (\w+)", op.rest)
    extra = f", cache=\"{CACHE[cache.group(1)]}\"" if cache and cache.group(1) != "none" else ""
    if op.name == "amdg.buffer_load":
        ptr, offsets, *rest = operands
        extra = (f", mask={rest[0]}" if rest else "") + (f", other={rest[1]}" if len(rest) > 1 else "") + extra
        return f"buffer_load({ptr}, {offsets}{extra})"
    value, ptr, offsets, *rest = operands
    e.lines.append("    " * indent + f"buffer_store({value}, {ptr}, {offsets}"
                                     f"{f', mask={rest[0]}' if rest else ''}{extra})")
    return None


@functools.lru_cache(maxsize=None)
def _libdevice_names() -> dict[str, str]:
    """Each libdevice symbol (``__nv_tanhf``, ``__ocml_tanh_f32``) -> the ``libdevice`` function
    that calls it, read from Triton's CUDA and HIP libdevice modules."""
    import importlib
    names: dict[str, str] = {}
    for module in ("triton.language.extra.cuda.libdevice", "triton.language.extra.hip.libdevice"):
        source = inspect.getsource(importlib.import_module(module))
        for function, body in re.findall(r"^def (\w+)\((.*?)(?=^@|^def |\Z)", source, flags=re.M | re.S):
            names.update((symbol, function) for symbol in re.findall(r'"(__\w+)"', body))
    return names


def _extern_elementwise(e: Emitter, op: Op, indent: int) -> str:
    symbol = op.attr("symbol").strip('"')
    function = _libdevice_names().get(symbol)
    if function is None:
        raise Unsupported(op, f"external function {symbol} is not one of libdevice's", e.where(op))
    e.imports.add("from triton.experimental.gluon.language.extra import libdevice")
    return f"libdevice.{function}({', '.join(e.value(v) for v in op.operands)})"


RULES = {
    **{name: _binary for name in BINARY}, **{name: _unsigned_binary for name in UNSIGNED_BINARY},
    **{name: _call for name in CALLS}, **{name: _cast for name in CASTS},
    "arith.uitofp": _cast, "arith.extui": _cast, "arith.fptoui": _cast,
    "arith.cmpf": _compare, "arith.cmpi": _compare, "arith.select": _select, "arith.negf": _negate,
    "arith.constant": _constant, "arith.bitcast": _bitcast, "tt.bitcast": _bitcast, "tt.fp_to_fp": _fp_to_fp,
    "tt.splat": _splat, "tt.broadcast": _broadcast, "tt.expand_dims": _expand_dims, "tt.make_range": _make_range,
    "tt.addptr": _addptr, "tt.load": _load, "tt.store": _store, "tt.get_program_id": _program_id,
    "tt.get_num_programs": _program_id, "ttg.convert_layout": _convert_layout, "tt.reduce": _reduce,
    "tt.scan": _reduce, "tt.atomic_rmw": _atomic_rmw, "tt.atomic_cas": _atomic_cas,
    "tt.elementwise_inline_asm": _inline_asm, "scf.for": _for, "scf.if": _if, "scf.while": _while,
    "cf.cond_br": _branch, "cf.br": _branch,
    "ttg.barrier": _barrier_all, "gpu.barrier": _barrier_all,
    "ttg.local_alloc": _local_alloc, "ttg.memdesc_index": _memdesc_index,
    "ttg.memdesc_subslice": _memdesc_subslice, "ttg.local_load": _local_load,
    "ttg.local_store": _local_store, "ttg.async_copy_global_to_local": _async_copy,
    "ttg.async_commit_group": _commit_group, "ttg.async_wait": _async_wait, "tt.dot": _dot,
    "ttng.fence_async_shared": _fence_async_shared, "ttng.warp_group_dot": _warp_group_dot,
    "ttng.warp_group_dot_wait": _warp_group_dot_wait, "ttng.tmem_alloc": _tmem_alloc, "ttng.tmem_store": _tmem_store,
    "ttng.tmem_load": _tmem_load, "ttng.init_barrier": _barrier, "ttng.inval_barrier": _barrier,
    "ttng.wait_barrier": _barrier, "ttng.tc_gen5_mma": _tcgen05_mma, "amdg.buffer_load": _buffer_access,
    "amdg.buffer_store": _buffer_access, "amdg.in_thread_transpose": _in_thread_transpose,
    "rocdl.s.setprio": _setprio, "rocdl.sched.barrier": _sched_barrier,
    "tt.extern_elementwise": _extern_elementwise,
    "ttg.global_scratch_alloc": _global_scratch, "ttng.tensormap_create": _tensormap_create,
    "ttng.tensormap_fenceproxy_acquire": _tensormap_fence, "ttng.reinterpret_tensor_descriptor": _reinterpret_descriptor,
    "ttng.async_tma_copy_global_to_local": _tma_load, "ttng.async_tma_copy_local_to_global": _tma_store,
    "ttng.async_tma_store_wait": _tma_store_wait, "ttng.barrier_expect": _barrier_expect,
    "ttg.memdesc_trans": _memdesc_trans, "tt.trans": _trans, "tt.reshape": _reshape, "tt.join": _join,
    "tt.split": _split,
}
