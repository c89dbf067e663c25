"""Parsing and printing the small modules the pass tests feed their rewrites, and running a\npass on one as the pipeline runs it (``run_pass``)."""
from __future__ import annotations

import re

from interop import pipeline
from interop.entry.compile_context import CompileContext
from interop.setting import BuildSettings
from interop.stitching import runner
from interop.stitching.state import Stitch
from interop.targets import TARGETS
from interop.triton.bindings import gluon_ir, ir, parse_module
from interop.triton.frontend import make_backend

#: Each target's module attributes: its warp size decides the layouts a module of it may hold.
ATTRIBUTES = {
    "sm90a": '"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", '
             '"ttg.threads-per-warp" = 32 : i32',
    "sm100a": '"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:100", '
              '"ttg.threads-per-warp" = 32 : i32',
    "gfx942": '"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "hip:gfx942", '
              '"ttg.threads-per-warp" = 64 : i32',
}
LANES = {"sm90a": 32, "sm100a": 32, "gfx942": 64}


def module_text(target: str, layouts: dict[str, str], body: str) -> str:
    """A module of ``target`` declaring ``layouts`` (name -> attribute text) around ``body``."""
    declared = "".join(f"#{name} = {text}\n" for name, text in layouts.items())
    return f"{declared}module attributes {{{ATTRIBUTES[target]}}} {{\n{body}}}\n"


def blocked(per_thread: list[int], lanes: list[int], warps: list[int], order: list[int]) -> str:
    return (f"#ttg.blocked<{{sizePerThread = {per_thread}, threadsPerWarp = {lanes}, warpsPerCTA = {warps}, "
            f"order = {order}}}>")


def parsed(text: str, target: str):
    """(module, context, a Gluon builder) of ``text``, parsed in a fresh context with ``target``'s
    dialects (AMD's buffer ops, NVIDIA's tensor memory)."""
    context = ir.context()
    ir.load_dialects(context)
    make_backend(TARGETS[target]).load_dialects(context)
    return parse_module(text, context), context, gluon_ir.GluonOpBuilder(context)


def printed(module, layouts: dict[str, str]) -> str:
    """The module's body as printed without locations, each layout of ``layouts`` under the test's
    name for it (the printer names them ``#blocked``, ``#blocked1``... anew)."""
    text = module.str_nodebug()
    named = {attribute: name for name, attribute in layouts.items()}
    aliases = {alias: named.get(attribute, alias[1:])
               for alias, attribute in re.findall(r"^(#\w+) = (.*)$", text, re.MULTILINE)}
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return re.sub(r"#\w+(?![\w.])", lambda m: "#" + aliases[m.group(0)] if m.group(0) in aliases else m.group(0),
                  body)


def ops(module, name: str) -> list:
    """The ops of ``module`` named ``name``, in walk order."""
    found: list = []
    module.walk(lambda op: found.append(op) if op.get_name() == name else None)
    return found


def count(module, name: str) -> int:
    return len(ops(module, name))


def conditions(module) -> set[str]:
    """The printed conditions of the ``scf.if`` ops left: Triton 3.6's Gluon canonicalizer keeps a
    branch on a constant (``%true``, ``%false``) that later versions fold away."""
    return set(re.findall(r"scf\.if (%\w+)", module.str_nodebug()))


def stitch_of(context, target: str, host: str = "triton", **settings) -> Stitch:
    """The state a pass takes, of a compile of ``target`` in ``context`` with a ``host`` kernel and
    ``settings`` (``BuildSettings``' fields): no regions, boundaries or calls until a test adds them."""
    backend = make_backend(TARGETS[target])
    return Stitch(CompileContext(context, backend.parse_options({"num_warps": 4}), TARGETS[target],
                                 BuildSettings(**settings), host_language=host))


def run_pass(state: Stitch, module, *names: str) -> Stitch:
    """The passes ``names`` of ``state``'s host's pipeline (``interop.pipeline``), in the order
    given, as the pipeline runs them: each skipped where its ``when`` is false, verified after."""
    passes = {p.name: p for p in (pipeline.TRITON_HOST if state.host_language == "triton" else pipeline.GLUON_HOST)}
    runner.run([passes[name] for name in names], state, module)
    return state
