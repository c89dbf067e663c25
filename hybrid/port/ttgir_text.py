"""The printed TritonGPU IR of one lowered region, read back as ops (what ``gluon_emit`` writes out).

Triton's bindings expose an op's name, operands and results but not its attributes, so the port
reads the module as MLIR prints it (pretty form, with locations): attribute aliases (``#blocked =
#ttg.blocked<{...}>``), location aliases (``#loc3 = loc("file.py":12:20)``, ``loc("acc"(#loc3))``
for a named value) and one function's body, nested regions (``scf.for``, ``scf.if``,
``tt.reduce``) as nested blocks. Each ``Op`` keeps its text after the op name for the emitter's
rules to read the few attributes each one needs.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Block:
    args: list[tuple[str, str]]            # (%name, type)
    ops: list[Op] = field(default_factory=list)


@dataclass
class Op:
    name: str                              # "arith.addf"
    results: list[str]                     # "%x" (a multi-result op: "%x#0", "%x#1", ...)
    rest: str                              # the text after the op name, its location removed
    loc: str                               # "#loc12" or "" when unknown
    regions: list[Block] = field(default_factory=list)
    trailer: str = ""                      # text after a region's closing brace (tt.reduce's types)

    @property
    def operands(self) -> list[str]:
        """The SSA values named before the type signature, in order (not those it defines there)."""
        defines = self.defines
        return [v for v in re.findall(r"%[\w$.\-]+(?:#\d+)?", signature_split(" " + self.rest)[0]) if v not in defines]

    @property
    def carried(self) -> list[tuple[str, str]]:
        """A loop's carried values with their initial values, ``(%a, %init)``: an ``scf.for``'s
        ``iter_args(%a = %init, ...)``, an ``scf.while``'s ``(%a = %init, ...)``."""
        if self.name == "scf.for":
            inside = re.search(r"iter_args\((.*?)\) ->", self.rest)
            return re.findall(r"(%[\w$.\-]+) = (%[\w$.\-#]+)", inside.group(1)) if inside else []
        if self.name == "scf.while":
            return re.findall(r"(%[\w$.\-]+) = (%[\w$.\-#]+)", self.rest.split(" : ")[0])
        return []

    @property
    def defines(self) -> list[str]:
        """The values it defines in its own line besides its results: a loop's carried values and
        an ``scf.for``'s induction variable (``%iv = %lb to %ub step %s iter_args(%a = %init)``)."""
        head = re.match(r"(%[\w$.\-]+) = ", self.rest) if self.name == "scf.for" else None
        return ([head.group(1)] if head else []) + [a for a, _ in self.carried]

    @property
    def types(self) -> str:
        return signature_split(" " + self.rest + self.trailer)[1]

    def attr(self, key: str) -> str | None:
        found = re.search(rf"\b{key} = ([^,}}]+)", self.rest)
        return found.group(1).strip() if found else None


@dataclass(frozen=True)
class Where:
    """Where an op came from: the innermost ``file:line`` its location names, and the source
    variable a ``NameLoc`` gives it."""
    file: str
    line: int
    name: str | None


@dataclass
class Module:
    aliases: dict[str, str]                # "#blocked" -> "#ttg.blocked<{...}>"
    locations: dict[str, Where]            # "#loc12" -> Where
    args: list[tuple[str, str]]            # the function's (%name, type)
    body: Block
    target: str = ""                       # the module's ttg.target: "cuda:90", "hip:gfx950"
    #: "#loc12" -> its source positions, innermost first (a call site's callee, then its caller):
    #: the key that matches one function's ops across two lowerings of it
    positions: dict[str, tuple] = field(default_factory=dict)
    #: The locations of the ops a kernel inlined from the call ``parse`` was given (``inlined_at``)
    inlined: frozenset[str] = frozenset()


def uses(block: Block, value: str) -> list[tuple[Op, int]]:
    """``(op, operand index)`` for each use of ``value`` by the ops of ``block`` and of the regions
    nested in it."""
    found = []
    for op in block.ops:
        found += [(op, k) for k, v in enumerate(op.operands) if v == value]
        for region in op.regions:
            found += uses(region, value)
    return found


def used_from_outside(block: Block, given: set[str]) -> list[str]:
    """The values ``block``'s ops (and their regions') use that are made elsewhere, in first use
    order, but ``given``."""
    made, used = set(given), []

    def visit(b: Block) -> None:
        made.update(arg for arg, _ in b.args)
        for o in b.ops:
            used.extend(v for v in o.operands if v not in made and v not in used)
            made.update(o.defines)
            for region in o.regions:
                visit(region)
            made.update(o.results)

    visit(block)
    return used


def signature_split(text: str) -> tuple[str, str]:
    """``text`` split at its last top-level `` : `` (outside ``<>``, ``{}``, ``()``, ``[]``)."""
    depth, cut = 0, -1
    for i, ch in enumerate(text):
        if ch in "<{([":
            depth += 1
        elif ch in ">})]":
            depth -= 1
        elif depth == 0 and text.startswith(" : ", i):
            cut = i
    return (text, "") if cut < 0 else (text[:cut], text[cut + 3:])


_LOC_TAIL = re.compile(r"\s*loc\((#loc\d*|unknown|callsite\([^)]*\)|\"[^\"]*\"\([^)]*\))\)\s*$")
_ALIAS = re.compile(r"^(#\w+) = (.*)$")


def parse(text: str, function: str, inlined_at: tuple[str, int] | None = None) -> Module:
    """The module text's aliases, locations and the body of ``function``. ``inlined_at``: the
    ``(file, line)`` of a call the function inlined; its ops are then read as the callee sees them
    (their locations and positions without that call site) and their locations listed."""
    aliases, raw_locs = {}, {}
    for line in text.splitlines():
        found = _ALIAS.match(line)
        if found:
            (raw_locs if found.group(2).startswith("loc(") else aliases)[found.group(1)] = found.group(2)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s*tt\.func \w+ @{function}\(", line))
    args = _func_args(lines[start])
    body, _ = _block(lines, start + 1, [])
    target = re.search(r'ttg\.target = "([^"]*)"', text)
    inlined: frozenset[str] = frozenset()
    if inlined_at is not None:
        raw_locs, inlined = _as_callee(raw_locs, inlined_at)
    return Module(aliases, _resolve_locations(raw_locs), args, body, target.group(1) if target else "",
                  _positions(raw_locs), inlined)


def _func_args(line: str) -> list[tuple[str, str]]:
    inside = line[line.index("(") + 1:]
    return [(m.group(1), m.group(2).strip()) for m in
            re.finditer(r"(%[\w$.\-]+): (.*?)(?: \{[^}]*\})? loc\([^)]*\)(?:, |\))", inside)]


def _block(lines: list[str], i: int, args: list) -> tuple[Block, int]:
    """Ops from line ``i`` to the closing brace of this block; returns the line after it. Blocks
    after the first (a branch's targets) are read as ``_branched`` says."""
    block = entry = Block(args)
    labelled: dict[str, Block] = {}
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("}"):
            return _branched(entry, labelled), i
        if line.startswith("^bb"):
            found = [(m.group(1), m.group(2)) for m in re.finditer(r"(%[\w$.\-]+): ([^ ]+?) loc\(", line)]
            if block.ops:
                block = labelled[re.match(r"\^bb\d+", line).group(0)] = Block(found)
            else:
                block.args = found
            i += 1
            continue
        op = _op(line)
        i += 1
        while line.endswith("{"):   # a region: parse it, then what follows its closing brace
            region, i = _block(lines, i, [])
            op.regions.append(region)
            line = lines[i].strip()
            tail = line.lstrip("})").strip()
            i += 1
            if tail.startswith(("else", "do")):   # scf.if's else region, scf.while's body
                continue
            tail_text, loc = _strip_loc(tail)
            op.trailer, op.loc = " " + tail_text, loc or op.loc
            break
        block.ops.append(op)
    return block, i


def _branched(entry: Block, labelled: dict[str, Block]) -> Block:
    """The entry block, each ``cf.cond_br %c, ^a, ^b`` that ends a block given the two blocks it
    branches to as its regions where each is reached from it alone (an early ``return`` in a
    kernel: ``if c: ...; return``). Blocks read otherwise stay in the entry block's ops after it,
    as printed, for the emitter to refuse."""
    def nest(block: Block) -> Block:
        last = block.ops[-1] if block.ops else None
        targets = re.fullmatch(r"%[\w$.\-]+, (\^bb\d+), (\^bb\d+)", last.rest) if last and last.name == "cf.cond_br" else None
        if targets and len(set(targets.groups())) == 2 and all(t in labelled for t in targets.groups()):
            last.regions = [nest(labelled.pop(t)) for t in targets.groups()]
        return block

    nest(entry)
    for left in labelled.values():
        entry.ops.extend(left.ops)
    return entry


def _strip_loc(text: str) -> tuple[str, str]:
    found = _LOC_TAIL.search(text)
    if not found:
        return text, ""
    loc = found.group(1)
    return text[:found.start()], loc if loc.startswith("#loc") else ""


def _op(line: str) -> Op:
    results: list[str] = []
    head = re.match(r"^((?:%[\w$.\-]+(?::\d+)?(?:, )?)+) = ", line)
    if head:
        for part in head.group(1).split(", "):
            name, _, count = part.partition(":")
            results += [f"{name}#{k}" for k in range(int(count))] if count else [name]
        line = line[head.end():]
    if line.startswith('"'):
        name, rest = line[1:].split('"', 1)
    else:   # (``scf.condition(%c) %a : i32`` has its first operand right after its name)
        name = re.match(r"[^\s(]+", line).group(0)
        rest = line[len(name):].lstrip(" ")
    if line.endswith("{"):
        rest = rest[:-1].rstrip().rstrip("(").rstrip()
        return Op(name, results, rest, "")
    rest, loc = _strip_loc(rest)
    return Op(name, results, rest.strip(), loc)


_CALLSITE = re.compile(r"loc\(callsite\((#loc\d*) at (#loc\d*)\)\)")
_SAME = re.compile(r"loc\((#loc\d*)\)$")   # another alias's location (what ``_as_callee`` writes)


def _positions(raw: dict[str, str]) -> dict[str, tuple]:
    """Per location alias, its ``(file, line, column)`` positions, a callee's before its caller's."""
    found: dict[str, tuple] = {}

    def get(key: str) -> tuple:
        if key not in found:
            found[key] = ()   # (a guard, as in _resolve_locations)
            text = raw.get(key, "")
            if m := re.match(r'loc\("([^"]*)":(\d+):(\d+)\)', text):
                found[key] = ((m.group(1), int(m.group(2)), int(m.group(3))),)
            elif m := re.match(r'loc\("[^"]*"\((#loc\d*)\)\)', text):
                found[key] = get(m.group(1))
            elif m := _CALLSITE.match(text):
                found[key] = get(m.group(1)) + get(m.group(2))
            elif m := _SAME.match(text):
                found[key] = get(m.group(1))
        return found[key]

    return {key: get(key) for key in raw}


def _as_callee(raw: dict[str, str], site: tuple[str, int]) -> tuple[dict[str, str], frozenset[str]]:
    """``raw`` with each call site at ``site`` (file, line) replaced by its callee's location, and
    the aliases so replaced (or naming one that was): the ops inlined from that call. The call may
    be in a function the kernel inlined in turn (attention's ``kv_loop`` called in ``attention_loop``):
    its call sites then continue with that function's; one that the kernel inlined at several
    places inlines the call at each, which is no one copy of it, so nothing is matched."""
    positions = _positions(raw)
    out, inlined, callers = dict(raw), set(), set()
    lines = _call_lines(*site)
    for key, text in raw.items():
        m = _CALLSITE.match(text)
        chain = tuple(p[:2] for p in positions.get(m.group(2), ())) if m else ()
        if chain and chain[0][0] == site[0] and chain[0][1] in lines:
            out[key] = f"loc({m.group(1)})"
            inlined.add(key)
            callers.add(chain)
    if len(callers) > 1:
        return dict(raw), frozenset()
    grown = True
    while grown:   # a name given to such a location, a call inlined into the call (``g at <f at site>``)
        before = len(inlined)
        inlined.update(key for key, text in raw.items()
                       if (m := re.match(r'loc\("[^"]*"\((#loc\d*)\)\)', text) or _CALLSITE.match(text))
                       and m.groups()[-1] in inlined)
        grown = len(inlined) > before
    return out, frozenset(inlined)


def _call_lines(file: str, line: int) -> range:
    """The lines of the call that starts at ``line`` of ``file``: Triton 3.6 locates a call written
    over several lines at a later one of them (an argument's)."""
    try:
        tree = ast.parse(Path(file).read_text())
    except (OSError, SyntaxError, ValueError):
        return range(line, line + 1)
    ends = [node.end_lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and node.lineno == line]
    return range(line, max(ends, default=line) + 1)


def _resolve_locations(raw: dict[str, str]) -> dict[str, Where]:
    resolved: dict[str, Where | None] = {}

    def get(key: str) -> Where | None:
        if key in resolved:
            return resolved[key]
        resolved[key] = None   # cycles cannot happen in MLIR; this guards a malformed text
        text = raw.get(key, "")
        found = None
        if m := re.match(r'loc\("([^"]*)":(\d+):\d+\)', text):
            found = Where(m.group(1), int(m.group(2)), None)
        elif m := re.match(r'loc\("([^"]*)"\((#loc\d*)\)\)', text):
            inner = get(m.group(2))
            found = Where(inner.file, inner.line, m.group(1)) if inner else None
        elif m := _CALLSITE.match(text):
            found = get(m.group(2)) or get(m.group(1))   # the line in the ported function
        elif m := _SAME.match(text):
            found = get(m.group(1))
        resolved[key] = found
        return found

    return {key: where for key in raw if (where := get(key)) is not None}
