"""The project's layers (issue 21). Its packages import one way, ``interop`` (compiler core) <-
``scheduler`` <- ``hybrid`` (front end), so each can be read and used without the ones above it.
Triton's internals are reached through one layer, ``interop/triton/``: elsewhere the project
imports only Triton's public modules and touches no private attribute it does not define itself,
so a Triton release that moves an internal changes one package."""
import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hybrid", "interop", "scheduler")
LAYER = ROOT / "interop" / "triton"

#: Triton modules any code may import (public API); Gluon's public namespaces are allowed below
PUBLIC_MODULES = {"triton", "triton.experimental", "triton.language", "triton.language.extra", "triton.language.extra.libdevice",
                  "triton.testing", "triton.profiler", "triton.knobs", "triton.runtime"}
#: names of semi-internal modules that are public API
PUBLIC_NAMES = {("triton.backends.compiler", "GPUTarget")}
#: underscore names that are Python API, not anyone's internals
PYTHON_API = {"_asdict", "_fields", "_replace", "_getframe", "_make"}


def _public_module(module: str) -> bool:
    if module in PUBLIC_MODULES:
        return True
    parts = module.split(".")
    return parts[:3] == ["triton", "experimental", "gluon"] and not any(p.startswith("_") for p in parts)


def _public_import(module: str, name: str) -> bool:
    """``from module import name``: public where the module is and ``name`` is not one of its
    internal submodules (``triton.language.core``, ``triton.runtime.interpreter``)."""
    if (module, name) in PUBLIC_NAMES:
        return True
    if not _public_module(module) or _private(name):
        return False
    try:
        submodule = importlib.util.find_spec(f"{module}.{name}") is not None
    except ModuleNotFoundError:
        submodule = False
    return not submodule or _public_module(f"{module}.{name}")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_here(trees: dict) -> set[str]:
    """Private names the project defines itself (functions, classes, attributes, assignments)."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return {n for n in names if _private(n)}


def violations(trees: dict, defined: set[str]) -> list[str]:
    """Each import of a Triton internal and each private attribute of someone else, as
    ``file:line: what``, in the modules of ``trees`` (path -> parsed module)."""
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            where = f"{path}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where}: import {a.name}" for a in node.names
                          if a.name.split(".")[0] == "triton" and not _public_module(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "triton":
                found += [f"{where}: from {node.module} import {a.name}" for a in node.names
                          if not _public_import(node.module, a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) \
                        and node.attr not in defined and node.attr not in PYTHON_API:
                    found.append(f"{where}: .{node.attr}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr") \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str) and _private(node.args[1].value) \
                    and node.args[1].value not in defined:
                found.append(f"{where}: {node.func.id}(..., {node.args[1].value!r})")
    return found


def _project() -> dict:
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p)) for p in files}


def test_triton_internals_are_reached_only_through_interop_triton():
    trees = _project()
    outside = {path: tree for path, tree in trees.items() if not (ROOT / path).is_relative_to(LAYER)}
    assert len(outside) > 50 and len(outside) < len(trees)
    found = violations(outside, _defined_here(trees))
    assert not found, "Triton internals outside interop/triton/ (add a public name there):\n" + "\n".join(found)


#: package -> the project packages it must not import (not even inside a function)
BELOW = {"interop": {"scheduler", "hybrid", "examples"}, "scheduler": {"hybrid", "examples"}, "hybrid": {"examples"}}


def test_packages_import_one_way():
    upward = []
    for path, tree in _project().items():
        banned = BELOW[path.split("/")[0]]
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            upward += [f"{path}:{node.lineno}: {name}" for name in names if name.split(".")[0] in banned]
    assert not upward, "imports against the layering interop <- scheduler <- hybrid:\n" + "\n".join(upward)


def module_imports(trees: dict) -> dict[str, set[str]]:
    """Per project module (dotted), the project modules it imports anywhere, lazily too:
    ``from . import a`` and ``from .a import x`` both import ``a``."""
    modules = {path.removesuffix(".py").removesuffix("/__init__").replace("/", "."): path for path in trees}
    graph = {}
    for module, path in modules.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        graph[module] = set()
        for node in ast.walk(trees[path]):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + [node.module or ""]) \
                    .strip(".") if node.level else node.module or ""
                graph[module] |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
            elif isinstance(node, ast.Import):
                graph[module] |= {a.name for a in node.names}
        graph[module] = {m for m in graph[module] if m in modules and m != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each a path that comes back to where it started."""
    found, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            found.append(path[path.index(module):] + [module])
            return
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return found


def test_the_compiler_core_has_no_import_circle():
    """A circle (source -> compile_context -> triton_regions -> lowering_cache -> source, through a
    lazy import) makes the order modules load in matter; none is left."""
    graph = module_imports({p: t for p, t in _project().items() if p.startswith("interop/")})
    assert "interop.lowering.lowering_cache" in graph["interop.lowering.triton_regions"]
    assert not cycles(graph), "\n".join(" -> ".join(c) for c in cycles(graph))


# interop's steps, lowest first: each imports only from its own step and those before it. Triton's
# layer, the IR utilities every rewrite uses (walking, verifying, copying), the shared records and
# errors (interop/*.py) and the targets (names, which op needs which architecture, shared memory)
# come first; lowering drives stitching and the boundaries; the pass lists (interop/pipeline.py, a
# step of one module) name passes of all of them; the entry (request, sources, hooks) runs the pass lists.
STEPS = ("triton", "ir", "", "targets", "instrumentation", "stitching", "boundaries", "lowering", "pipeline", "entry")
#: steps that are one module of interop/ rather than a package
MODULE_STEPS = {"pipeline"}


def step_of(module: str) -> str:
    """``interop.lowering.assemble`` -> ``lowering``; ``interop.errors`` -> ``''``."""
    parts = module.split(".") + [""]
    return parts[1] if parts[1] in STEPS else ""


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} -> {d}" for m, ds in graph.items() for d in ds
                  if STEPS.index(step_of(d)) > STEPS.index(step_of(m)))


def test_interop_steps_import_one_way():
    """The folder tree is the pipeline: a module never imports from a later step, so each package
    reads (and tests) without the ones that drive it."""
    trees = {p: t for p, t in _project().items() if p.startswith("interop/")}
    packages = {p.split("/")[1] for p in trees if p.count("/") == 2}
    assert packages == set(STEPS) - {""} - MODULE_STEPS, \
        "a package of interop/ missing from STEPS (or a step without a package)"
    graph = module_imports(trees)
    assert not upward_imports(graph), "imports against interop's steps:\n" + "\n".join(upward_imports(graph))


def test_the_step_check_finds_an_upward_import():
    trees = {"interop/boundaries/planner.py": ast.parse("from ..lowering import arch"),
             "interop/lowering/arch.py": ast.parse("from ..errors import TargetError"),
             "interop/errors.py": ast.parse("")}
    assert upward_imports(module_imports(trees)) == ["interop.boundaries.planner -> interop.lowering.arch"]


def test_the_circle_check_finds_lazy_imports():
    trees = {"interop/a.py": ast.parse("from . import b"), "interop/b.py": ast.parse("def f():\n    from .a import x")}
    assert cycles(module_imports(trees)) == [["interop.a", "interop.b", "interop.a"]]


@pytest.mark.parametrize("code, expected", [
    ("from triton._C.libtriton import ir", "from triton._C.libtriton import ir"),
    ("import triton.compiler.code_generator", "import triton.compiler.code_generator"),
    ("from triton.experimental.gluon.language._layouts import SharedLayout", "_layouts import SharedLayout"),
    ("from triton.runtime import interpreter", "from triton.runtime import interpreter"),
    ("from triton.language import core", "from triton.language import core"),
    ("x = layout._to_ir(builder)", "._to_ir"),
    ("getattr(tl, '_unwrap_if_constexpr')", "getattr(..., '_unwrap_if_constexpr')"),
])
def test_the_scan_finds_each_kind_of_internal(code, expected):
    (found, ) = violations({"m.py": ast.parse(code)}, defined=set())
    assert expected in found and found.startswith("m.py:1: ")


def test_the_scan_lets_public_api_and_own_privates_through():
    code = ("import triton\nimport triton.language as tl\nfrom triton.runtime import JITFunction, Autotuner\n"
            "from triton.experimental.gluon.language.nvidia.hopper import tma\nfrom triton.testing import do_bench\n"
            "from triton.backends.compiler import GPUTarget\nself._cache = {}\nmd._asdict()\nobj._mine()\n")
    assert violations({"m.py": ast.parse(code)}, defined={"_mine"}) == []


def test_every_package_is_installed_and_nothing_else():
    """``pyproject.toml`` lists packages by name: a new subpackage left out would be missing from a
    wheel (an editable install hides it); ``examples`` runs from the checkout, and the interpreter
    lives under ``hybrid`` (``interpret`` is another distribution's import name)."""
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {str(init.parent.relative_to(ROOT)).replace("/", ".") for package in PACKAGES
             for init in (ROOT / package).rglob("__init__.py")}
    assert listed == found and "hybrid.interpret" in found


def test_the_planner_reads_the_ir_without_stitching():
    """Planning needs only the IR utilities (``interop/ir/``): it reads (and tests) without the
    stitching that runs before it."""
    graph = module_imports({p: t for p, t in _project().items() if p.startswith("interop/")})
    assert "interop.ir.copy" in graph["interop.boundaries.planner"]
    assert not [m for m in graph["interop.boundaries.planner"] if step_of(m) == "stitching"]
