"""The text of the two files ``hybrid port start`` writes: the port and its compare test."""
from __future__ import annotations

import inspect
import json
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from interop.triton import compat

from .errors import shown, where
from .launch import run_variant
from .names import qualified
from .translate import Port


#: The warps a port is for where neither the kernel's launch nor ``--num-warps`` says.
DEFAULT_WARPS = 4


@dataclass(frozen=True)
class Context:
    """What both files say about where the port comes from and what it is for."""
    module: ModuleType
    fn: object            # the Triton function ported
    kernel: object        # the kernel that calls it, which the test runs
    target: str
    warp_size: int
    num_warps: int
    port_path: Path
    test_path: Path
    command: str          # the `hybrid port start ...` that wrote them
    variant: str | None   # run(variant, ...) launches the kernel: the test's inputs come from problem() and run()


def port_source(port: Port, ctx: Context) -> str:
    """The port's file: header, constants, the function, the helpers it calls."""
    still = ", ".join(port.still_triton) or "none"
    library = ("\n# - Triton library functions it calls as they are (compiled as Gluon code, where they can be): "
               + ", ".join(port.library)) if port.library else ""
    header = f"""\
# {port.name}: a first Gluon version of {qualified(ctx.fn)} ({where(ctx.fn)}),
# the function {qualified(ctx.kernel)} calls, for {ctx.target} ({ctx.warp_size} threads a warp) and num_warps={ctx.num_warps}.
# Written by: {ctx.command}
# Translated by Triton {compat.TRITON_VERSION}'s {port.translator}, then made self-contained (public Gluon API only).
#
# Check by hand:
# - Layouts: every tensor takes the default blocked layout of its rank (default_blocked_layout, below)
#   and is converted back to it on entry, after reductions and reshapes and after each call. Correct,
#   not fast: choose layouts for the data and drop the conversions it no longer needs.
# - It is for {ctx.target} and num_warps={ctx.num_warps} only (TARGET, THREADS_PER_WARP, NUM_WARPS); its test
#   fails if it is run against another target's port.
# - Still Triton, each call a Triton region inside the port: {still}.{library}
# - The arithmetic is the translator's one-to-one mapping of tl.* to gl.*. Compare before editing:
#     pytest {shown(ctx.test_path)}
"""
    imports = ["from triton.experimental import gluon", "from triton.experimental.gluon import language as gl",
               *port.imports]
    constants = [f"TARGET = {ctx.target!r}  # the compare test checks that it runs against this target's port",
                 f"THREADS_PER_WARP = gl.constexpr({ctx.warp_size})  # {ctx.target}",
                 f"NUM_WARPS = gl.constexpr({ctx.num_warps})  # --num-warps: the kernel runs with num_warps={ctx.num_warps}",
                 *port.constants]
    parts = [header.rstrip("\n") + "\n\n" + "\n".join(imports), "\n".join(constants), port.function, *port.defs,
             "# -- Layout helpers (hybrid/port/gluon_helpers.py): the translator's default layouts, built from\n"
             "# THREADS_PER_WARP and NUM_WARPS. Replace them with the layouts you choose.",
             *port.helpers]
    return "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"


def compare_test_source(name: str, ctx: Context) -> str:
    """The compare test's file: imports the module and the port ``name``, makes inputs, calls ``compare``."""
    module, kernel, fn = ctx.module.__name__, ctx.kernel.fn.__name__, ctx.fn.fn.__name__
    here, root = ctx.test_path.parent.resolve(), module_root(ctx.module)
    root = f'HERE / "{Path(os.path.relpath(root, here)).as_posix()}"' if here.is_relative_to(root) else f'Path("{root}")'
    inputs, mode_doc = _inputs(ctx)
    capture = "" if ctx.variant is None else "from hybrid.port import capture_launch  # noqa: E402\n"
    whole = ctx.fn is ctx.kernel   # the whole kernel ported: the test runs the port in its place
    replaced = f"{name}, its port," if whole else f"{module}.{kernel} with {fn} replaced by {name}"
    about = textwrap.fill(f"Runs {module}.{kernel} as written and {replaced} on the same inputs, and checks that "
                          f"every tensor they write agrees. {mode_doc}", 100)
    region = "" if whole else f"region=original.{fn}, "
    return f'''"""Compare test of {name}, the port of {qualified(ctx.fn)}.

{about}

Written by: {ctx.command}
"""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(({root}).resolve())]  # the port; where {module} is imported from

import {module} as original  # noqa: E402
{capture}from {ctx.port_path.stem} import NUM_WARPS, {name}  # noqa: E402

TARGET = "{ctx.target}"


{inputs}


def test_{name}_matches_{fn}():
    port_target = {name}.fn.__globals__["TARGET"]
    assert port_target == TARGET, (f"{name} comes from a port for {{port_target}}, not {{TARGET}} "
                                   f"({{{name}.fn.__code__.co_filename}}): another target's port was imported")
    grid, args, kwargs = inputs()
    from hybrid.port import compare
    assert kwargs.get("num_warps", 4) == NUM_WARPS, (
        f"{module}.{kernel} is launched with num_warps={{kwargs.get('num_warps', 4)}} but the port's layouts are for "
        f"{{NUM_WARPS}}: write the port again with `hybrid port start ... --num-warps N`")
    result = compare(original.{kernel}, {region}candidate={name}, grid=grid, args=args,
                     kwargs=kwargs, target=TARGET)
    print(result.report())   # results, and the machine code with and without the port (pytest -s shows it)
    assert result.ok, result.report()
'''


def inputs_variant(module: ModuleType, kernel: str) -> str | None:
    """The variant of the module's ``run`` that launches ``kernel`` on ``problem(*CHECK_SIZE)``'s
    inputs, where the module is written like the examples; None: the test's inputs are a stub."""
    return run_variant(module, kernel) if has_problem(module) else None


def has_problem(module: ModuleType) -> bool:
    return callable(getattr(module, "problem", None)) and hasattr(module, "CHECK_SIZE")


def module_root(module: ModuleType) -> Path:
    """The folder ``module`` is imported from by its dotted name (above its top package)."""
    path = Path(module.__file__).resolve()
    depth = module.__name__.count(".") + (path.name == "__init__.py")
    return path.parents[depth]


def _inputs(ctx: Context) -> tuple[str, str]:
    """The test's ``inputs()``: from the module's problem() and run() where it has them, else a stub."""
    module, kernel, variant = ctx.module, ctx.kernel.fn.__name__, ctx.variant
    name = module.__name__
    if variant is not None:
        guard, device = "", ""
        if "device" in inspect.signature(module.problem).parameters:   # the GPU, else the CPU interpreter
            guard = '    import torch\n'
            device = ', device="cuda" if torch.cuda.is_available() else "cpu"'
        elif "cuda" in inspect.getsource(module.problem):
            guard = (f'    import torch\n    if not torch.cuda.is_available():\n'
                     f'        pytest.skip("{name}.problem() makes its inputs on the GPU")\n')
        return (f'''def inputs():
    """One launch of {kernel} as {name}.run("{variant}", ...) makes it, for {name}.problem(*CHECK_SIZE)
    (recorded, not run): grid, args, kwargs."""
{guard}    p = original.problem(*original.CHECK_SIZE{device})
    with capture_launch(original, "{kernel}") as recorder:
        original.run("{variant}", p, TARGET)
    return recorder.launch.grid, recorder.launch.args, recorder.launch.kwargs''',
                f"Inputs: {name}.problem(*CHECK_SIZE), launched as {name}.run(\"{variant}\", ...) launches it.")
    why = (f"{name}.run() does not launch {kernel} itself for one variant" if has_problem(module)
           else f"{name} has no problem() and CHECK_SIZE to make inputs with")
    message = _stub_message(ctx)
    return (f'''def inputs():
    """One launch of {kernel}: return grid, args, kwargs. To fill in ({why})."""
    raise NotImplementedError(
        {_literal(message, 8)})''', f"Inputs: to fill in, in inputs() ({why}).")


def _stub_message(ctx: Context) -> str:
    """What ``inputs()`` must return, parameter by parameter."""
    kernel, module = ctx.kernel, ctx.module
    signature = getattr(module, "SIGNATURE", None)
    known = isinstance(signature, dict)

    def kind(name: str) -> str:
        pointer = str(signature[name]).startswith("*") if known and name in signature else "ptr" in name
        return "tensor" if pointer else "scalar"

    args = ", ".join(f"{p.name} ({kind(p.name)})" for p in kernel.params if not p.is_constexpr) or "none"
    constexprs = ", ".join(p.name for p in kernel.params if p.is_constexpr)
    guessed = "" if known else f" (tensor or scalar told by the name: {module.__name__} has no SIGNATURE)"
    return (f"fill in inputs() in {ctx.test_path.name}: return (grid, args, kwargs) for one launch of "
            f"{qualified(kernel)} ({where(kernel)}). grid: a tuple of program counts (or a function of the "
            f"meta-parameters). args, in this order: {args}{guessed}; tensors as torch tensors (on the GPU, or on the "
            f"CPU for the interpreter). kwargs: {constexprs + ' (constexprs), ' if constexprs else ''}"
            f"num_warps={ctx.num_warps} (the port's layouts are for {ctx.num_warps} warps).")


def _literal(text: str, indent: int, width: int = 100) -> str:
    """``text`` as adjacent string literals, one a line, for generated code."""
    chunks = textwrap.wrap(text, width - indent - 2, drop_whitespace=False, break_on_hyphens=False)
    return ("\n" + " " * indent).join(json.dumps(chunk) for chunk in chunks)
