"""Differential testing of one region: the kernel as written against the kernel with one
function replaced (a Gluon port of a Triton function, or a new version of either).

Both runs get fresh clones of the same inputs; every tensor either run writes is compared.
On a GPU the kernels run there (and are timed); elsewhere in the interpreter, so a port can
be checked on any machine.
"""
from __future__ import annotations

import contextlib
import re
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import triton
from triton.experimental import gluon
from triton.runtime import JITFunction

from interop.triton.frontend import GluonJITFunction

from .. import jit as hybrid_jit
from .names import jit_callees, jit_function, references


@dataclass(frozen=True)
class OutputDiff:
    name: str
    max_abs: float      # inf where only one run wrote NaN
    ok: bool
    relative: float = 0.0   # ||candidate - original|| / ||original|| over the elements both wrote as numbers


@dataclass(frozen=True)
class Comparison:
    region: str
    candidate: str
    mode: str                          # "gpu" or "interpreter (<target>)"
    outputs: list[OutputDiff]
    times_ms: dict = field(default_factory=dict)   # GPU only: {"original": ms, "candidate": ms}
    #: {"target": ..., "original": {...}, "candidate": {...}}: instructions, registers, shared_bytes of
    #: each build for the target (no GPU needed); {"error": ...} where a build failed
    machine: dict = field(default_factory=dict)
    #: A candidate written per call site (``<candidate>_<k>``, as ``hybrid port`` writes a function
    #: its kernel calls at sites Triton lowers differently): how often each ran (interpreter only).
    site_runs: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every output agrees, and every per-site port ran (else its site was not compared)."""
        return bool(self.outputs) and all(o.ok for o in self.outputs) and all(self.site_runs.values())

    def report(self) -> str:
        lines = [f"{self.region} -> {self.candidate} ({self.mode}): {'same results' if self.ok else 'DIFFERENT'}"]
        if not self.outputs:
            lines.append("  no tensor argument was written by either run")
        for o in self.outputs:
            lines.append(f"  {o.name}: max abs diff {o.max_abs:.3g}, relative {o.relative:.2g} "
                         f"{'ok' if o.ok else 'MISMATCH'}")
        for port, runs in self.site_runs.items():
            lines.append(f"  {port}: ran {runs} times" if runs else
                         f"  {port}: NEVER RAN: its call site was not compared; give the kernel inputs where it runs")
        for version, ms in self.times_ms.items():
            lines.append(f"  {version}: {ms:.4f} ms")
        if "error" in self.machine:
            lines.append(f"  machine code: not built ({self.machine['error']})")
        elif self.machine:
            original, candidate = self.machine["original"], self.machine["candidate"]
            lines.append(f"  machine code ({self.machine['target']}), original -> with the candidate: " + ", ".join(
                f"{key.replace('_', ' ')} {original[key]} -> {candidate[key]}" for key in original))
        return "\n".join(lines)


def with_region(kernel: JITFunction, region: JITFunction, candidate: JITFunction) -> JITFunction:
    """A mixed copy of ``kernel`` whose calls to ``region`` call ``candidate`` instead: its own
    calls, and those of the JIT functions it reaches (each such function copied likewise)."""
    copy = _swapped(kernel.fn, region, candidate, {})
    if copy is None:
        raise ValueError(f"{kernel.__name__} does not call {region.__name__} by a global name or as an attribute of "
                         f"a module it imports, nor do the JIT functions it calls; compare swaps the names their own "
                         f"source uses (call the region directly)")
    return as_hybrid(kernel, copy)


def _swapped(fn, region: JITFunction, candidate: JITFunction, copies: dict):
    """A copy of the Python function ``fn`` whose global names for ``region`` (directly, as a
    module's attribute, or inside a JIT function it calls, copied in turn) name ``candidate``;
    None where its source reaches no call of ``region``. ``copies``: JIT function id -> its copy
    (or None)."""
    names = {}
    for name, callee in jit_callees(fn).items():
        if callee is region or callee is candidate or not isinstance(callee.fn, types.FunctionType):
            continue
        if id(callee) not in copies:
            copies[id(callee)] = None   # (a recursive call reaches nothing new)
            copies[id(callee)] = _jit_copy(callee, _swapped(callee.fn, region, candidate, copies))
        if copies[id(callee)] is not None:
            names.update({n: copies[id(callee)] for n, value in fn.__globals__.items() if value is callee})
    if not names and not any(value is region for _, value in references(fn)):
        return None
    names.update({name: candidate for name, value in fn.__globals__.items() if value is region})
    names.update({name: _module_with(value, region, candidate) for name, value in fn.__globals__.items()
                  if isinstance(value, types.ModuleType) and region in vars(value).values()})   # module.region(...)
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, **names}, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy.__annotations__, copy.__kwdefaults__ = dict(fn.__annotations__), fn.__kwdefaults__   # constexpr marks
    return copy


def _jit_copy(callee: JITFunction, fn) -> JITFunction | None:
    """``callee`` decorated again around ``fn`` (None: none), with what was set on it since
    (``@hybrid.takes`` declarations)."""
    if fn is None:
        return None
    decorate = gluon.jit if isinstance(callee, GluonJITFunction) else triton.jit
    copy = decorate(fn, noinline=callee.noinline)
    for key, value in vars(callee).items():
        vars(copy).setdefault(key, value)
    return copy


def _module_with(module: types.ModuleType, region, candidate) -> types.ModuleType:
    """A copy of ``module`` whose attributes naming ``region`` name ``candidate``."""
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update({k: candidate if v is region else v for k, v in vars(module).items()})
    return copy


def as_hybrid(kernel: JITFunction, fn=None) -> JITFunction:
    """``kernel`` (or ``fn`` decorated like it) as a ``@hybrid.jit`` kernel."""
    if fn is None and type(kernel).__name__.startswith("Hybrid"):
        return kernel
    decorate = gluon.jit if isinstance(kernel, GluonJITFunction) else triton.jit
    return hybrid_jit(decorate(fn if fn is not None else kernel.fn))


def compare(kernel, *, region=None, candidate, grid, args: tuple, kwargs: dict | None = None, atol: float = 1e-4,
            rtol: float = 1e-3, interpret: bool | None = None, target: str | None = None,
            machine_code_report: bool = True, relative_tolerance: float | None = None) -> Comparison:
    """Run ``kernel`` as written and with ``region`` replaced by ``candidate`` (no ``region``: the
    whole kernel replaced by ``candidate``, launched with the same arguments); compare outputs. An
    autotuned kernel runs its JIT function with the constexprs in ``kwargs`` (one config's).
    ``machine_code_report``: also build both for the target and report their machine code.
    ``relative_tolerance``: judge each output by ``||candidate - original|| / ||original||`` instead
    of element by element, for outputs summed in an order that varies from run to run (atomics,
    lock-ordered accumulation), where two runs of the kernel itself differ elementwise."""
    import torch
    kernel, kwargs = jit_function(kernel), dict(kwargs or {})
    on_gpu = torch.cuda.is_available() if interpret is None else not interpret
    original = as_hybrid(kernel)
    swapped = as_hybrid(jit_function(candidate)) if region is None else with_region(kernel, region, candidate)
    # the tensors passed by keyword are outputs as much as positional ones: each run writes its own copies
    names = [kernel.arg_names[i] if i < len(kernel.arg_names) else f"arg{i}" for i in range(len(args))] + list(kwargs)
    runs = {}
    for version, k in (("original", original), ("candidate", swapped)):
        run_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        run_kwargs = {n: v.clone() if isinstance(v, torch.Tensor) else v for n, v in kwargs.items()}
        with _counting(per_site(candidate) if version == "candidate" and not on_gpu else []) as site_runs:
            _launch(k, grid, run_args, run_kwargs, on_gpu, target)
        runs[version] = run_args + list(run_kwargs.values())
    outputs = _diffs(names, [*args, *kwargs.values()], runs["original"], runs["candidate"], atol, rtol,
                     relative_tolerance)
    times = _times(original, swapped, grid, args, kwargs) if on_gpu else {}
    from hybrid import interpret as interp
    build_target = target or interp.default_target()
    mode = "gpu" if on_gpu else f"interpreter ({build_target})"
    machine = machine_code(original, swapped, args, kwargs, build_target) if machine_code_report else {}
    return Comparison((region or kernel).__name__, candidate.__name__, mode, outputs, times, machine, dict(site_runs))


def per_site(candidate: JITFunction) -> list[JITFunction]:
    """The ports ``candidate`` picks among, one per call site's specialization (``<name>_<k>``
    in its module), in order; none for a port of one specialization."""
    pattern = re.compile(rf"{re.escape(candidate.__name__)}_(\d+)")
    found = {int(m.group(1)): value for name, value in candidate.fn.__globals__.items()
             if (m := pattern.fullmatch(name)) and isinstance(value, JITFunction)}
    return [found[k] for k in sorted(found)]


@contextlib.contextmanager
def _counting(functions: list[JITFunction]) -> Iterator[Counter]:
    """How often the interpreter runs each of ``functions`` in the block (by name)."""
    counts = Counter({fn.__name__: 0 for fn in functions})
    if not functions:
        yield counts
        return
    from hybrid.interpret import patch
    original = patch.call_jit

    def counted(fn, args, kwargs, **options):
        if any(fn is f for f in functions):
            counts[fn.__name__] += 1
        return original(fn, args, kwargs, **options)

    patch.call_jit = counted   # (the patched JITFunction.__call__ looks it up at each call)
    try:
        yield counts
    finally:
        patch.call_jit = original


def machine_code(original, swapped, args: tuple, kwargs: dict, target: str) -> dict:
    """Instructions (SASS or AMDGCN), registers and shared memory of both kernels built for
    ``target`` as this launch specializes them."""
    import hybrid

    from .launch import build_arguments
    try:
        signature, constexprs, options = build_arguments(original, args, kwargs)
        built = {version: hybrid.compile(k, signature, constexprs, target, **options)
                 for version, k in (("original", original), ("candidate", swapped))}
    except Exception as exc:   # the comparison of results stands on its own
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"}
    return {"target": target, **{version: figures(fb) for version, fb in built.items()}}


def figures(fb) -> dict:
    """A hybrid build's instructions (SASS or AMDGCN), registers and shared memory."""
    from interop.instrumentation.resources import instructions, resources
    found = resources(fb.asm, fb.metadata if isinstance(fb.metadata, dict) else fb.metadata._asdict())
    return {"instructions": instructions(fb.asm), "registers": found["registers"], "shared_bytes": found["shared_bytes"]}


def _launch(kernel, grid, args, kwargs, on_gpu: bool, target: str | None) -> None:
    if on_gpu:
        kernel[grid](*args, **kwargs)
        return
    from hybrid import interpret
    interpret.launch(kernel, grid, *args, target=target or interpret.default_target(), **kwargs)


def _diffs(names: list[str], inputs, first, second, atol: float, rtol: float,
           relative_tolerance: float | None) -> list[OutputDiff]:
    import torch
    diffs = []
    for name, given, a, b in zip(names, inputs, first, second):
        if not isinstance(given, torch.Tensor):
            continue
        written = not torch.equal(a.nan_to_num(1.5), given.nan_to_num(1.5)) or \
            not torch.equal(b.nan_to_num(1.5), given.nan_to_num(1.5))
        if not written:
            continue
        a64, b64 = a.double().cpu(), b.double().cpu()
        nan_apart = bool((a64.isnan() != b64.isnan()).any())
        both = ~(a64.isnan() | b64.isnan())
        finite = a64.isfinite() & b64.isfinite()
        max_abs = float("inf") if nan_apart else float((a64[both] - b64[both]).abs().max()) if both.any() else 0.0
        relative = float((b64[finite] - a64[finite]).norm() / a64[finite].norm().clamp_min(1e-30))
        if relative_tolerance is None:
            ok = not nan_apart and torch.allclose(a64, b64, atol=atol, rtol=rtol, equal_nan=True)
        else:   # infinities where the other has the same one, numbers within the norm
            same_infinities = all(torch.equal(sign(a64), sign(b64)) for sign in (torch.isposinf, torch.isneginf))
            ok = not nan_apart and same_infinities and relative <= relative_tolerance
        diffs.append(OutputDiff(name, max_abs, ok, relative))
    return diffs


def _times(original, swapped, grid, args, kwargs) -> dict:
    from triton.testing import do_bench
    return {version: do_bench(lambda k=k: k[grid](*args, **kwargs), return_mode="median")
            for version, k in (("original", original), ("candidate", swapped))}
