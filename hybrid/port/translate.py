"""Upstream's Triton -> Gluon translation of one ``@triton.jit`` function, made into a port.

The translator (``interop.triton.compat.triton_to_gluon``) reads Python source: it takes the function
itself, kernel or not, so no wrapper kernel is needed. It writes the function and everything it
calls, in a dialect that depends on the Triton release (3.9: ``gl``, ``helpers.tl_arange``, library
reductions as ``gl.sum``; 3.6: ``ttgl``, star-imported helpers, ``tl.sum`` rewritten as a local
``def sum`` that does not compile). This module brings both to one form and keeps only the function:

- its layout helpers are the ones in ``gluon_helpers`` (public Gluon API, the target's warp size
  and ``--num-warps`` as constants), never the translator's own modules;
- library functions Gluon has unchanged (``sum``, ``max``, ``cdiv`` ...) become ``gl.<name>``;
- the user's functions it calls stay Triton: the port imports and calls them (each call a Triton
  region inside the port), so exactly one function is ported, and its callees can be next;
- tensors entering it (arguments, results of the Triton functions it calls) are converted to the
  default layouts, since they arrive in whatever layouts the caller's compiler chose.

Whatever does not fit (``tl.dot``, tensor descriptors, names the translator could not carry over)
is a ``PortError`` naming the construct and its ``file:line``, never a file that refers to what it
does not define. What only the compiler can tell (a Triton library function the port calls as it is
that does not compile as Gluon code) shows when the compare test builds the kernel.
"""
from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass, field

import triton.language as tl
from triton.experimental.gluon import language as gl
from triton.runtime import JITFunction

from interop.triton import compat

from .errors import PortError, where
from .gluon_helpers import HELPERS, helper_sources
from .names import is_library, is_triton, jit_callees, qualified, resolve, source_tree

#: Translator helpers with no port here -> (the Triton construct, the word to find it by in the source).
UNSUPPORTED = {
    "tl_dot": ("tl.dot", "dot"), "tl_dot_scaled": ("tl.dot_scaled", "dot_scaled"), "tl_cat": ("tl.cat", "cat"),
    "cat": ("tl.cat", "cat"), "tl_make_tensor_descriptor": ("tl.make_tensor_descriptor", "make_tensor_descriptor"),
    "tl_load_tensor_descriptor": ("tl.load_tensor_descriptor", "load_tensor_descriptor"),
    "tl_store_tensor_descriptor": ("tl.store_tensor_descriptor", "store_tensor_descriptor"),
    "tl_obj_load": ("a tensor descriptor's .load()", "load"), "tl_obj_store": ("a tensor descriptor's .store()", "store"),
    "tl_obj_gather": ("a tensor descriptor's .gather()", "gather"),
    "tl_obj_scatter": ("a tensor descriptor's .scatter()", "scatter"),
    "get_num_threads_per_program": ("tl.extra.cuda.num_threads", "num_threads"),
    "get_num_threads_per_warp": ("the warp size", "num_threads"),
}
#: Library reductions whose results the translator converts back to the default layout (as 3.9 does).
RESET_AFTER = {"sum", "max", "min"}
#: Names every port defines besides its helpers.
PORT_GLOBALS = {"gluon", "gl", "TARGET", "THREADS_PER_WARP", "NUM_WARPS"}


@dataclass
class Port:
    """One translated function, ready to be written out."""
    name: str                        # the port's name (``<fn>_gluon_<target>``)
    function: str                    # its source
    defs: list[str]                  # library functions the translator wrote out that it calls
    constants: list[str]             # module-level constants it uses
    imports: list[str]               # import lines it needs, besides gluon and gl
    helpers: list[str]               # sources of the layout helpers it calls
    translator: str                  # the upstream module that translated it
    still_triton: list[str] = field(default_factory=list)   # the user's Triton functions it calls (regions)
    library: list[str] = field(default_factory=list)        # Triton library functions it calls as they are


def translate(fn: JITFunction, target: str, name: str) -> Port:
    """The port of ``fn`` for ``target``, named ``name``; a ``PortError`` if it cannot be written."""
    try:
        text, translator = compat.triton_to_gluon([fn], target)
        module = ast.parse(text)
    except Exception as exc:   # the translator's own failures carry no location
        raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): Triton's Triton-to-Gluon translator failed on it "
                        f"or on a function it calls: {type(exc).__name__}: {exc}. Write this port by hand.") from exc
    module = _Normalize().visit(module)
    imports, defs, constants = _split(module, translator.rpartition(".")[0])
    own = fn.fn.__name__
    if own not in defs:
        raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): the translator's output has no function '{own}' "
                        f"(it defines {', '.join(defs) or 'none'}); write this port by hand.")
    callees = jit_callees(fn)
    for callee in callees:
        defs.pop(callee, None)
    library = {d for d in defs if d != own and _same_in_gluon(d)}
    for d in library:
        defs.pop(d)
    namespace = _namespace(imports, callees)
    port = defs.pop(own)
    for node in [port, *defs.values()]:
        _Rewrite(library, namespace).visit(node)
    _prepare(port, name)
    kept_defs, kept_constants, names = _reachable(port, defs, constants)
    _check(fn, names, {d: defs[d] for d in kept_defs}, kept_constants, imports, callees, translator)
    called = {qualified(v): v for n in ast.walk(port) if isinstance(n, ast.Call)
              for v in [resolve(n.func, namespace)] if is_triton(v)}
    return Port(name=name, function=ast.unparse(port), defs=[ast.unparse(defs[d]) for d in kept_defs],
                constants=[ast.unparse(constants[c]) for c in kept_constants],
                imports=[ast.unparse(i) for i in imports] + _callee_imports(fn, callees, names),
                helpers=helper_sources(names), translator=translator,
                still_triton=sorted(q for q, v in called.items() if not is_library(v)),
                library=sorted(q for q, v in called.items() if is_library(v)))


class _Normalize(ast.NodeTransformer):
    """The two translators' dialects -> one: ``gl``, bare helper names, 3.9's expand-dims form."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name("gl", node.ctx) if node.id == "ttgl" else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "helpers":
            return ast.Name(node.attr, node.ctx)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        # 3.6: convert_layout(v, SliceLayout(d, default_blocked_layout(shape, num_warps()))) before v[None, :]
        if _is_gl(node.func, "convert_layout") and len(node.args) == 2 and isinstance(node.args[1], ast.Call) \
                and _is_gl(node.args[1].func, "SliceLayout") and len(node.args[1].args) == 2 \
                and _is_call_of(node.args[1].args[1], "default_blocked_layout"):
            return ast.Call(ast.Name("convert_to_expand_dims_layout", ast.Load()),
                            [node.args[0], ast.List([node.args[1].args[0]], ast.Load())], [])
        if _is_call_of(node, "default_blocked_layout") and len(node.args) == 2 and isinstance(node.args[1], ast.Call) \
                and _is_gl(node.args[1].func, "num_warps"):
            node.args = node.args[:1]        # the port's layouts take NUM_WARPS, not the launch's
        if _is_call_of(node, "tl_trans") and node.args:
            return ast.Call(ast.Attribute(node.args[0], "trans", ast.Load()), node.args[1:], node.keywords)
        return node


class _Rewrite(ast.NodeTransformer):
    """Library functions -> ``gl.<name>``; results of the JIT functions it calls -> the default layouts."""

    def __init__(self, library: set[str], namespace: dict):
        self.library, self.namespace = library, namespace

    def visit_Call(self, node: ast.Call) -> ast.AST:
        library = isinstance(node.func, ast.Name) and node.func.id in self.library
        node = self.generic_visit(node)
        if (library and node.func.attr in RESET_AFTER) or isinstance(resolve(node.func, self.namespace), JITFunction):
            return _reset(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.library and isinstance(node.ctx, ast.Load):
            return ast.Attribute(ast.Name("gl", ast.Load()), node.id, ast.Load())
        return node


def _prepare(port: ast.FunctionDef, name: str) -> None:
    """Rename, decorate, and open with the num_warps check and the arguments' conversions."""
    port.name = name
    port.decorator_list = [ast.Attribute(ast.Name("gluon", ast.Load()), "jit", ast.Load())]
    body = port.body
    docstring = body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else []
    message = (f"{name}: launch the kernel with num_warps=NUM_WARPS (the port's layouts are made for that many "
               f"warps), or change NUM_WARPS")
    prologue = [ast.parse(f"gl.static_assert(gl.num_warps() == NUM_WARPS, {message!r})").body[0]]
    args = port.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        if not _is_gl(arg.annotation, "constexpr"):
            prologue.append(ast.parse(f"{arg.arg} = reset_to_default_layout({arg.arg})").body[0])
    port.body = docstring + prologue + body[len(docstring):]
    ast.fix_missing_locations(port)


def _split(module: ast.Module, package: str) -> tuple[list[ast.stmt], dict[str, ast.FunctionDef], dict[str, ast.stmt]]:
    """Imports the port keeps (not Gluon's, not the translator ``package``'s helpers), the translated
    functions and the module-level assignments, by name."""
    imports, defs, constants = [], {}, {}
    for stmt in module.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            helpers = isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(package)
            if not helpers and not _imported([stmt]) <= {"gluon", "gl", "ttgl", "helpers"}:
                imports.append(stmt)
        elif isinstance(stmt, ast.FunctionDef):
            defs[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        constants[node.id] = stmt
    return imports, defs, constants


def _same_in_gluon(name: str) -> bool:
    """Gluon has this library function unchanged (the very same Python function as ``tl.<name>``)."""
    ours, theirs = getattr(gl, name, None), getattr(tl, name, None)
    return isinstance(ours, JITFunction) and isinstance(theirs, JITFunction) and ours.fn is theirs.fn


def _namespace(imports: list[ast.stmt], callees: dict) -> dict:
    """What the port's module-level names will be bound to, for resolving its calls."""
    namespace = dict(callees)
    for stmt in imports:
        try:
            exec(compile(ast.Module([stmt], []), "<port imports>", "exec"), namespace)
        except Exception:   # an import the port cannot do: _check reports the names it leaves undefined
            pass
    return namespace


def _reachable(port: ast.FunctionDef, defs: dict, constants: dict) -> tuple[list[str], list[str], set[str]]:
    """The functions and constants the port needs (in the translator's order), and the global
    names that it and they load."""
    names, todo, seen = set(), [port], set()
    while todo:
        for name in _free_names(todo.pop()) - names:
            names.add(name)
            for table in (defs, constants):
                if name in table and id(table[name]) not in seen:
                    seen.add(id(table[name]))
                    todo.append(table[name])
    return [d for d in defs if d in names], [c for c in constants if c in names], names


def _free_names(node: ast.AST) -> set[str]:
    """Names ``node`` loads that it does not bind itself (arguments, assignments, loop targets)."""
    loads, bound = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return loads
    return loads - bound


def _check(fn, names: set[str], defs: dict[str, ast.FunctionDef], constants: list[str], imports: list[ast.stmt],
           callees: dict, translator: str) -> None:
    """Every global name the port loads is one it defines; none is a translator helper without a port here."""
    for name, (construct, word) in UNSUPPORTED.items():
        if name in names:
            raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): {construct} at {_locate(fn, word)} has no "
                            f"port here: the translator writes it as `{name}` from its own helper module, which is not "
                            f"public API and whose layouts depend on the Triton release. Write that part by hand, or "
                            f"move it into a @triton.jit helper that {fn.fn.__name__} calls: called functions stay "
                            f"Triton (a Triton region inside the port).")
    clash = (set(callees) | set(defs) | set(constants)) & names & (set(HELPERS) | PORT_GLOBALS)
    if clash:
        raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): it uses {', '.join(sorted(clash))}, a name the "
                        f"port needs for its own layout helpers; rename it in {fn.fn.__module__}.")
    bound = set(defs) | set(constants) | set(callees) | set(HELPERS) | PORT_GLOBALS | _imported(imports)
    missing = sorted(n for n in names - bound if not hasattr(builtins, n))
    if not missing:
        return
    name = missing[0]
    owner = next((d for d, node in defs.items() if name in _free_names(node)), None)
    if owner is not None:     # in the translator's Gluon version of a library function (3.6: tl.argmax, ...)
        raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): Triton {compat.TRITON_VERSION}'s translator "
                        f"({translator}) cannot translate tl.{owner} (used at {_locate(fn, owner)}): its version "
                        f"refers to `{name}`, which it does not define. Write that call by hand in the port, or move it "
                        f"into a @triton.jit helper that {fn.fn.__name__} calls (it stays Triton).")
    raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): the translation ({translator}) refers to `{name}` "
                    f"(used at {_locate(fn, name)}) but does not carry it over into the port. Make it a tl.constexpr "
                    f"global or a @triton.jit helper of {fn.fn.__module__}, or write that part by hand.")


def _imported(imports: list[ast.stmt]) -> set[str]:
    """The module-level names ``imports`` bind."""
    return {(a.asname or a.name).split(".")[0] for stmt in imports for a in stmt.names}


def _callee_imports(fn, callees: dict, names: set[str]) -> list[str]:
    """``from module import name`` for each function the port still calls, checked to import."""
    lines = []
    for name, callee in sorted(callees.items()):
        if name in names:
            module = callee.fn.__module__
            if getattr(sys.modules.get(module), name, None) is not callee:
                raise PortError(f"cannot port {qualified(fn)} ({where(fn)}): it calls {name} ({where(callee)}), which "
                                f"the port cannot import as `from {module} import {name}`; make it a module-level "
                                f"function of an importable module.")
            lines.append(f"from {module} import {name}")
    return lines


def _locate(fn, word: str) -> str:
    """``file:line`` of the first use of ``word`` (a name or attribute) in ``fn``'s source, else its ``def``."""
    for node in ast.walk(source_tree(fn)):
        if (isinstance(node, ast.Name) and node.id == word) or (isinstance(node, ast.Attribute) and node.attr == word):
            return where(fn, node.lineno)
    return where(fn)


def _reset(call: ast.Call) -> ast.Call:
    return ast.Call(ast.Name("reset_to_default_layout", ast.Load()), [call], [])


def _is_gl(node, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name) \
        and node.value.id == "gl"


def _is_call_of(node, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
