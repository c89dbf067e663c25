"""Constexpr values written as text (``hybrid build --constexpr``), in Gluon's own syntax.

    BLOCK=256   EPS=1e-5   NAME=text   DTYPE=gl.float16
    L=gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    S=gl.SliceLayout(1, gl.BlockedLayout([1], [32], [4], [0]))

A value is JSON (numbers, ``true``, lists), a Python literal, a dtype or layout of Gluon's
language module spelled ``gl.*`` / ``ttgl.*`` / ``tl.*`` (nested, with keywords), or else plain
text. Expressions are evaluated from their syntax tree, never by ``eval``: a name or call that is
not a Gluon layout constructor or dtype is an error, so a command line cannot run code.

A job must stay JSON (it travels to worker processes and names cache entries), so an
expression rides in a job as ``{"expr": text}`` and becomes its value where the job is resolved.
"""
from __future__ import annotations

import ast
import json

import triton.language as tl
from triton.experimental.gluon import language as gl

#: module prefixes a value may use, and the namespace each names
NAMESPACES = {"gl": gl, "ttgl": gl, "tl": tl}
EXPRESSION_KEY = "expr"


class ConstexprSyntaxError(ValueError):
    """A ``NAME=VALUE`` the command line cannot turn into a constexpr."""


def split_assignments(text: str) -> list[str]:
    """``"A=1,L=gl.BlockedLayout([1],[32],[4],[0])"`` -> the two assignments: commas split only
    outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def job_value(text: str):
    """The JSON a job carries for ``text``: JSON or plain text as is, an expression as ``{"expr": text}``
    (checked here, so a mistake fails on the command line, not in a worker)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return text
    if isinstance(tree.body, ast.Name) and tree.body.id not in NAMESPACES:
        return text   # a bare word: text, as before (a constexpr string)
    evaluate(text)
    return {EXPRESSION_KEY: text}


def value(job_value_):
    """A job's constexpr value as the compiler takes it (an ``{"expr": text}`` evaluated)."""
    if isinstance(job_value_, dict) and set(job_value_) == {EXPRESSION_KEY}:
        return evaluate(job_value_[EXPRESSION_KEY])
    return job_value_


def evaluate(text: str):
    """``text`` as a Python expression of literals and Gluon dtypes and layout constructors."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ConstexprSyntaxError(f"{text!r}: not a value ({exc.msg})") from None
    return _node(tree.body, text)


def _node(node: ast.AST, text: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_node(e, text) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Attribute):
        found = _attribute(node, text)
        if isinstance(found, tl.dtype):
            return found
        raise ConstexprSyntaxError(f"{text!r}: {ast.unparse(node)} is not a dtype (a layout needs its arguments)")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        constructor = _attribute(node.func, text)
        if not (isinstance(constructor, type) and constructor.__name__.endswith("Layout")):
            raise ConstexprSyntaxError(f"{text!r}: {ast.unparse(node.func)} is not a Gluon layout constructor")
        args = [_node(a, text) for a in node.args]
        kwargs = {k.arg: _node(k.value, text) for k in node.keywords if k.arg}
        try:
            return constructor(*args, **kwargs)
        except Exception as exc:
            raise ConstexprSyntaxError(f"{text!r}: {constructor.__name__} rejects these arguments: {exc}") from None
    raise ConstexprSyntaxError(f"{text!r}: only numbers, strings, lists, Gluon dtypes (gl.float16) and layout "
                               f"constructors (gl.BlockedLayout(...), gl.amd.AMDMFMALayout(...)) are allowed here, "
                               f"not {ast.unparse(node)}")


def _attribute(node: ast.Attribute, text: str):
    """``gl.amd.AMDMFMALayout`` -> the object, for a path under one of ``NAMESPACES`` (no private names)."""
    path = []
    while isinstance(node, ast.Attribute):
        path.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in NAMESPACES or any(p.startswith("_") for p in path):
        raise ConstexprSyntaxError(f"{text!r}: names must start with {', '.join(NAMESPACES)} "
                                   f"(gl.BlockedLayout, gl.float16), not {ast.unparse(node)}")
    found = NAMESPACES[node.id]
    for part in path:
        found = getattr(found, part, None)
        if found is None:
            raise ConstexprSyntaxError(f"{text!r}: {node.id}.{'.'.join(path)} does not exist")
    return found
