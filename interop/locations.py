"""Source lines of printed MLIR: which ``file:line`` each op comes from.

Printed modules put locations at the end of each op (``loc(#loc12)``) and define the aliases
at the bottom (``#loc12 = loc("f.py":3:5)``, ``callsite(#a at #b)``, ``"name"(#a)``). For an op
inlined from a function, the innermost (callee) location is the line that wrote it.
"""
from __future__ import annotations

import re

_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$", re.M)
_FILE_LINE = re.compile(r'^"([^"]*)":(\d+):\d+')


def _resolver(text: str):
    aliases = dict(_ALIAS.findall(text))
    cache: dict[str, str | None] = {}

    def resolve(loc: str, depth: int = 0) -> str | None:
        if loc in cache:
            return cache[loc]
        body = aliases.get(loc, loc) if loc.startswith("#") else loc
        found = None
        if depth < 64:
            if (match := _FILE_LINE.match(body)) is not None:
                found = f"{match.group(1)}:{match.group(2)}"
            elif body.startswith("callsite("):
                found = resolve(body[len("callsite("):].split(" at ")[0].strip(), depth + 1)
            elif (match := re.match(r'^"[^"]*"\((.*)\)$', body)) is not None:   # a named location
                found = resolve(match.group(1), depth + 1)
            elif body.startswith("fused["):
                found = resolve(body[len("fused["):].split(",")[0].strip(), depth + 1)
        cache[loc] = found
        return found

    return resolve


def op_lines(text: str) -> list[tuple[str, str | None, str]]:
    """(operation name, ``file:line`` or None, the printed line) for each op of a printed module."""
    resolve = _resolver(text)
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        at = stripped.rfind(" loc(")
        if at < 0 or stripped.startswith("#loc") or not stripped.endswith(")"):
            continue
        name = re.match(r"^(?:%[\w#:,\s%]+=\s*)?\"?([\w.]+)", stripped)
        out.append((name.group(1) if name else "?", resolve(stripped[at + len(" loc("):-1]), stripped))
    return out


def lines_of(text: str) -> set[str]:
    """Every ``file:line`` the ops of a printed module come from."""
    return {where for _, where, _ in op_lines(text) if where}
