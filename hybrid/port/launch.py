"""Where a generated compare test gets the kernel's inputs: from the module that already launches it.

The examples (and modules written like them) define ``problem(*CHECK_SIZE)`` (fresh inputs, as a
dict) and ``run(variant, p, target)`` (one launch of ``"hybrid"``, ``"triton"`` or ``"torch"``).
Rather than copy ``run``'s argument computation (strides, constexprs, layouts, ``num_warps``) into
the test, the test calls ``run`` with the kernel swapped for a recorder, and hands the recorded
grid and arguments to ``hybrid.port.compare``. ``run_variant`` finds, by reading ``run``'s source,
which variant launches the kernel.
"""
from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterator

#: The variants the examples' ``run`` knows (``bench/kernels.py`` runs all three).
EXAMPLE_VARIANTS = ("hybrid", "triton", "torch")


@dataclass
class Launch:
    """One ``kernel[grid](*args, **kwargs)``."""
    grid: object
    args: tuple
    kwargs: dict


class LaunchRecorder:
    """Stands in for a kernel: ``recorder[grid](*args, **kwargs)`` records the launch, runs nothing."""

    def __init__(self, kernel, name: str):
        self.kernel, self.name, self.launches = kernel, name, []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append(Launch(grid, args, kwargs))

    def __getattr__(self, attribute: str):
        return getattr(self.kernel, attribute)

    @property
    def launch(self) -> Launch:
        if not self.launches:
            raise LookupError(f"{self.name} was not launched: the code run under capture_launch must launch it "
                              f"through the module attribute, as `{self.name}[grid](...)`")
        return self.launches[0]


@contextlib.contextmanager
def capture_launch(module: ModuleType, name: str) -> Iterator[LaunchRecorder]:
    """Within the block, ``module.<name>`` is a ``LaunchRecorder``; the kernel is put back after."""
    recorder = LaunchRecorder(getattr(module, name), f"{module.__name__}.{name}")
    setattr(module, name, recorder)
    try:
        yield recorder
    finally:
        setattr(module, name, recorder.kernel)


def run_variant(module: ModuleType, kernel: str) -> str | None:
    """The ``variant`` for which ``module.run(variant, p, target)`` launches ``kernel`` itself
    (``kernel[grid](...)`` in ``run``'s own body); None if it does not, or not for exactly one."""
    run = getattr(module, "run", None)
    if not callable(run) or not list(inspect.signature(run).parameters)[:1]:
        return None
    variant = list(inspect.signature(run).parameters)[0]
    body = ast.parse(textwrap.dedent(inspect.getsource(run))).body[0].body
    found = _constraints(body, kernel, variant, None, frozenset())
    if found is None:
        return None
    allowed, excluded = found
    if allowed is None:
        allowed = {c.value for n in ast.walk(ast.Module(body, [])) if _tests(n, variant)
                   for c in ast.walk(n) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        allowed |= set(EXAMPLE_VARIANTS)
    candidates = set(allowed) - excluded
    return candidates.pop() if len(candidates) == 1 else None


def _constraints(body: list[ast.stmt], kernel: str, variant: str, allowed: frozenset | None, excluded: frozenset):
    """(the variants it may be, None for any; those it may not be) on the way to the launch of
    ``kernel`` in ``body``; None if ``body`` does not launch it."""
    for stmt in body:
        if _launches(stmt, kernel):
            if isinstance(stmt, ast.If) and _tests(stmt.test, variant):
                values, positive = _values(stmt.test)
                holds = (_narrow(allowed, values), excluded) if positive else (allowed, excluded | values)
                fails = (allowed, excluded | values) if positive else (_narrow(allowed, values), excluded)
                found = _constraints(stmt.body, kernel, variant, *holds)
                return found if found is not None else _constraints(stmt.orelse, kernel, variant, *fails)
            return allowed, excluded
        if isinstance(stmt, ast.If) and _tests(stmt.test, variant) and _leaves(stmt.body):
            values, positive = _values(stmt.test)    # `if variant == "torch": return ...`: past it, it is not
            allowed, excluded = (allowed, excluded | values) if positive else (_narrow(allowed, values), excluded)
    return None


def _launches(stmt: ast.stmt, kernel: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
               and ((isinstance(n.func.value, ast.Name) and n.func.value.id == kernel)
                    or (isinstance(n.func.value, ast.Attribute) and n.func.value.attr == kernel))
               for n in ast.walk(stmt))


def _tests(node, variant: str) -> bool:
    """``variant == "x"`` / ``!=`` / ``in (...)`` / ``not in (...)``."""
    return isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == variant \
        and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn))


def _values(test: ast.Compare) -> tuple[frozenset, bool]:
    """The strings ``test`` compares the variant with, and whether it holds for them (``==``, ``in``)."""
    values = frozenset(c.value for c in ast.walk(test.comparators[0]) if isinstance(c, ast.Constant))
    return values, isinstance(test.ops[0], (ast.Eq, ast.In))


def _narrow(allowed: frozenset | None, values: frozenset) -> frozenset:
    return values if allowed is None else allowed & values


def _leaves(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


#: torch dtype name -> Triton's signature type.
TORCH_TYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1"}
#: Launch keyword arguments that are compile options, not kernel parameters.
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim")


def build_arguments(kernel, args: tuple, kwargs: dict) -> tuple[dict, dict, dict]:
    """(signature, constexprs, options) of one launch ``kernel[grid](*args, **kwargs)``, as Triton's
    JIT specializes it: pointers aligned, integers that are multiples of 16 marked divisible."""
    from .errors import PortError
    from .names import jit_function
    kernel = jit_function(kernel)
    names = [p.name for p in kernel.params]
    # a keyword naming a parameter binds to it, as Triton's launcher binds it (upstream softmax's num_stages)
    bound = dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k in names or k not in OPTIONS}
    signature, constexprs, divisible = {}, {}, []
    for param in kernel.params:
        if param.name not in bound:
            continue
        value = bound[param.name]
        if param.is_constexpr or value is None:
            constexprs[param.name] = value
        elif hasattr(value, "data_ptr"):
            signature[param.name] = "*" + TORCH_TYPES[str(value.dtype).removeprefix("torch.")]
        elif isinstance(value, bool):
            signature[param.name] = "i1"
        elif isinstance(value, int):
            signature[param.name] = "i32" if -2**31 <= value < 2**31 else "i64"
            if value % 16 == 0 and value != 0:
                divisible.append(param.name)
        elif isinstance(value, float):
            signature[param.name] = "fp32"
        else:
            raise PortError(f"{kernel.__name__}'s argument {param.name} = {value!r}: no Triton type for it")
    options = {k: v for k, v in kwargs.items() if k in OPTIONS and k not in names}
    return signature, constexprs, {**options, "divisible": tuple(divisible)}


def build_for_problem(module: ModuleType, kernel: str, variant: str, target: str) -> tuple[dict, dict, dict]:
    """(signature, constexprs, options) of ``kernel``'s launch by ``module.run(variant, ...)`` on
    ``module.problem(*CHECK_SIZE)`` (made on the CPU where ``problem`` takes ``device``): what to
    build the kernel with, as that launch would."""
    import inspect
    device = {"device": "cpu"} if "device" in inspect.signature(module.problem).parameters else {}
    with capture_launch(module, kernel) as recorder:
        module.run(variant, module.problem(*module.CHECK_SIZE, **device), target)
    return build_arguments(recorder.kernel, recorder.launch.args, recorder.launch.kwargs)


@dataclass(frozen=True)
class Given:
    """A kernel's build arguments given on the command line (``--signature``, ``--constexpr``,
    ``--num-stages``): types, constexpr values as a job carries them (``constexpr_text.job_value``)
    and ``hybrid.compile`` options."""
    signature: dict = field(default_factory=dict)
    constexprs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.signature or self.constexprs or self.options)

    def flags(self) -> str:
        """The command-line flags that give these (for the command a port records)."""
        values = [f"{k}={v.get('expr', v) if isinstance(v, dict) else v}" for k, v in self.constexprs.items()]
        parts = [f" --signature {','.join(f'{k}={v}' for k, v in self.signature.items())}" if self.signature else "",
                 f" --constexpr '{','.join(values)}'" if values else ""]
        parts += [f" --{k.replace('_', '-')} {v}" for k, v in self.options.items()]
        return "".join(parts)


def build_as_given(module: ModuleType, kernel, target: str, signature: dict, constexprs: dict,
                   options: dict) -> tuple[dict, dict, dict]:
    """(signature, constexprs, options) of ``kernel`` as ``hybrid build`` resolves a job: the
    given types and values over the module's ``SIGNATURE`` and ``constexprs(target)``, its
    ``options(target)`` and ``DIVISIBLE``. For a kernel whose module has no ``problem()``/``run()``
    (a kernel of one's own, written as upstream's tutorials are)."""
    from interop.entry import constexpr_text
    from scheduler.planning import check_complete, module_constexprs, module_options

    from .errors import PortError
    from .names import jit_function
    fn = jit_function(kernel)
    values = {**module_constexprs(module, fn.__name__, target, fn.arg_names),
              **{k: constexpr_text.value(v) for k, v in constexprs.items()}}
    given = {**getattr(module, "SIGNATURE", {}), **signature}
    types = {a: given[a] for a in fn.arg_names if a in given and a not in values}
    try:
        check_complete(f"{module.__name__}:{fn.__name__}", fn, types, values)
    except ValueError as exc:
        raise PortError(str(exc)) from None
    return types, values, {**module_options(module, target), **options}


def build_arguments_for(module: ModuleType, kernel, target: str, given: Given, variant: str | None) -> tuple:
    """(signature, constexprs, options) to build ``kernel`` with: ``given`` over the module's
    defaults (``build_as_given``) or, with none given and a ``variant`` of the module's ``run()``
    that launches it, as that launch would (``build_for_problem``)."""
    from .names import jit_function
    if given or variant is None:
        return build_as_given(module, kernel, target, given.signature, given.constexprs, given.options)
    return build_for_problem(module, jit_function(kernel).__name__, variant, target)


@dataclass(frozen=True)
class Build:
    """One build configuration of a kernel, the one ``hybrid port start`` and ``hybrid port status``
    measure it in, and where it comes from: said on screen with every figure of it."""
    signature: dict
    constexprs: dict
    options: dict
    source: str            # "examples.softmax.run('triton') on problem(1000, 97)", or the module's defaults

    def said(self, target: str) -> str:
        """``sm90a, num_warps=4, BM=16, BN=128 (as examples.softmax.run('triton') ...)``."""
        shown = {**{k: v for k, v in self.options.items() if k != "divisible"}, **self.constexprs}
        values = ", ".join(f"{k}={v!r}" if len(repr(v)) <= 24 else f"{k}=<{type(v).__name__}>"
                           for k, v in shown.items())
        divisible = f", {'/'.join(self.options['divisible'])} multiples of 16" if self.options.get("divisible") else ""
        return f"{target}, {values}{divisible} ({self.source})"


def build_for(module: ModuleType, kernel, target: str, given: Given, variant: str | None, num_warps: int = 4) -> Build:
    """``build_arguments_for``, with where they come from; ``num_warps`` where nothing gives it."""
    signature, constexprs, options = build_arguments_for(module, kernel, target, given, variant)
    options.setdefault("num_warps", num_warps)
    source = (f"as {module.__name__}.run({variant!r}) launches it on problem{tuple(module.CHECK_SIZE)}"
              if variant is not None and not given else
              f"{module.__name__}'s SIGNATURE, constexprs(target) and options(target), as hybrid build and report "
              f"build it{', with the flags given' if given else ''}")
    return Build(signature, constexprs, options, source)
