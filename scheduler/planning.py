"""Build planning: a job is one (kernel, specialization, options, target), as plain data.

Jobs hold only names and JSON values, so any executor can ship them to another process or
machine; the worker imports the kernel itself. A kernel's module may provide defaults that the
command line cannot spell: ``SIGNATURE`` (a dict), ``constexprs(target)`` or
``constexprs(target, kernel)`` (for example target-specific layouts; each kernel gets only the
values of its own arguments), ``options(target)`` (``num_warps``, ``num_stages``) and ``DIVISIBLE``
(integer arguments a launch specializes as multiples of 16); values given in the job override
them, and options named nowhere take the backend's own defaults for the target, as a JIT launch's
do (``hybrid.compile``). A kernel with autotune configs (the module's ``CONFIGS``, or those of
the ``@triton.autotune`` on it) gets one job per config and target: each config's values are
applied over the module's defaults, as the autotuner applies them at a launch.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from triton.runtime import Autotuner, Config

from interop.entry import constexpr_text
from interop.cache_entries import sha256_json
from interop.targets import GPUS, TARGETS, canonical, suggestion


@dataclass(frozen=True)
class Job:
    kernel: str                                      # "path/to/module.py:name" or "package.module:name"
    target: str
    signature: dict = field(default_factory=dict)    # argument name -> Triton type, over the module's SIGNATURE
    constexprs: dict = field(default_factory=dict)   # JSON values, over the module's constexprs(target)
    options: dict = field(default_factory=dict)      # hybrid.compile keywords (num_warps, num_stages, ...)
    config: int | None = None                        # index into the kernel's autotune configs, if it has any

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def id(self) -> str:
        """Deterministic name of the job as asked for (the cache key also covers the sources)."""
        return sha256_json(self.to_json())[:16]

    @property
    def label(self) -> str:
        return f"{display_ref(self.kernel)} [{self.target}" + ("" if self.config is None else f", config {self.config}") + "]"


@dataclass
class Spec:
    """A job resolved against its module: exactly what ``hybrid.compile`` receives."""
    job: Job
    fn: object                 # the @hybrid.jit kernel
    signature: dict            # non-constexpr arguments, in the kernel's argument order
    constexprs: dict
    options: dict
    config: object = None      # the job's ``triton.Config``, applied to constexprs and options

    @property
    def params(self) -> list[dict]:
        """The launch parameters in the kernel's order with their types: the one list a record,
        a manifest and the loader's packing take (a dict's order does not survive a JSON round trip
        with sorted keys)."""
        return [{"name": name, "type": ty} for name, ty in self.signature.items()]

    @property
    def constexprs_json(self) -> dict:
        """Constexpr values as JSON: plain values stay, others (layouts) by their deterministic repr."""
        return json_values(self.constexprs)

    @property
    def config_json(self) -> dict | None:
        """The job's config for records and manifests: its index, key and values (JSON)."""
        if self.config is None:
            return None
        values = self.config.all_kwargs()
        return {"index": self.job.config, "key": config_key(self.config), "values": json_values(values, sort=False)}


def json_values(values: dict, sort: bool = True) -> dict:
    """Plain values stay, others (layouts) by their deterministic repr."""
    items = sorted(values.items()) if sort else values.items()
    return {k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v) for k, v in items}


def config_key(config) -> str:
    """A ``triton.Config``'s name in manifests and for the loader: every value a launch with it
    passes, in the autotuner's order (``BLOCK=1024,num_warps=8,num_ctas=1,num_stages=3``)."""
    return ",".join(f"{k}={v}" for k, v in json_values(config.all_kwargs(), sort=False).items())


def kernel_configs(module, kernel, target: str) -> list:
    """``kernel``'s autotune configs for ``target``: the module's ``CONFIGS`` (a list of
    ``triton.Config``, or a function of the target that returns one), else the configs of the
    ``@triton.autotune`` on the kernel; none for a kernel without either."""
    found = getattr(module, "CONFIGS", None)
    if callable(found):
        found = found(target)
    if found is None and isinstance(kernel, Autotuner):
        found = kernel.configs
    found = list(found or [])
    if not all(isinstance(config, Config) for config in found):
        raise TypeError(f"{module.__name__}.CONFIGS: expected a list of triton.Config (or a function of the target "
                        f"returning one), got {[type(config).__name__ for config in found]}")
    return found


def expand_targets(targets) -> list[str]:
    """``"all"`` or target or GPU names (a list or a comma-separated string) -> validated target
    names (``H100`` -> ``sm90a``); none (an empty string, only commas and spaces) is refused, not
    read as all."""
    names = [str(t).strip() for t in (targets.split(",") if isinstance(targets, str) else targets) if str(t).strip()]
    unknown = [t for t in names if t != "all" and canonical(t) is None]
    if unknown or not names:
        named = f"unknown target(s) {', '.join(t + suggestion(t) for t in unknown)}" if unknown else "no target given"
        raise ValueError(f"{named}; expected 'all' or some of {', '.join(TARGETS)} or GPU names ({', '.join(GPUS)})")
    return list(TARGETS) if "all" in names else list(dict.fromkeys(canonical(t) for t in names))


def plan(kernels: list[str], targets, signature: dict | None = None, constexprs: dict | None = None,
         options: dict | None = None) -> list[Job]:
    """Every (kernel, target) job, kernel-major, one per config where the kernel has autotune
    configs; path references are made absolute."""
    names, jobs = expand_targets(targets), []
    for ref in map(absolute_ref, kernels):
        counts = _config_counts(ref, names)
        jobs += [Job(ref, target, dict(signature or {}), dict(constexprs or {}), dict(options or {}), config)
                 for target in names for config in (range(counts[target]) if counts[target] else [None])]
    return jobs


def _config_counts(ref: str, targets: list[str]) -> dict[str, int]:
    """How many autotune configs ``ref``'s kernel has per target. A module that does not load
    (or whose ``CONFIGS`` fails) counts none here: its job raises the same error when it
    resolves, and so fails alone."""
    try:
        module = load_module(ref)
        kernel = getattr(module, ref.rpartition(":")[2], None)
        return {target: len(kernel_configs(module, kernel, target)) for target in targets}
    except Exception:
        return dict.fromkeys(targets, 0)


def absolute_ref(ref: str) -> str:
    module, sep, name = ref.rpartition(":")
    if not sep or not module or not name:
        raise ValueError(f"kernel reference {ref!r}: expected 'path/to/module.py:kernel' or 'package.module:kernel'")
    return f"{Path(module).resolve()}:{name}" if module.endswith(".py") else ref


def load_module(ref: str):
    """Import the module of ``ref``. A file is executed afresh every time (an edited kernel is
    seen by the next plan) with its folder on ``sys.path``, as ``python path/to/module.py`` would."""
    module_ref = ref.rpartition(":")[0]
    try:
        if not module_ref.endswith(".py"):
            return importlib.import_module(module_ref)
        path = Path(module_ref)
        if not path.is_file():
            raise FileNotFoundError(f"no kernel module at {path}")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        name = f"_hybrid_kernels_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem}"
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
        sys.modules[name] = module
        # From the source, never a .pyc: bytecode is trusted by mtime in whole seconds and size.
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
        return module
    except SystemExit as exc:   # a script's exit must not end the build (or the caller) silently
        raise ImportError(f"{module_ref}: the module called sys.exit({exc.code!r}) while being imported; a kernel "
                          "module must not exit on import (put script code under `if __name__ == '__main__':`)") \
            from None


def resolve(job: Job) -> Spec:
    module = load_module(job.kernel)
    name = job.kernel.rpartition(":")[2]
    kernel = getattr(module, name, None)
    config = _config(job, kernel_configs(module, kernel, job.target))
    fn = kernel.fn if isinstance(kernel, Autotuner) else kernel   # the @hybrid.jit kernel the autotuner launches
    if fn is None or not hasattr(fn, "arg_names"):
        found = ", ".join(jit_kernels(module)) or "none"
        raise LookupError(f"{display_ref(job.kernel)}: no JIT kernel named '{name}' in {display_module(module)} "
                          f"(its JIT functions: {found})")
    tuned = {} if config is None else config.all_kwargs()   # constexprs and launch options, as a launch gets them
    unknown = [k for k in job.constexprs if k not in fn.arg_names]
    if unknown:
        raise ValueError(f"{display_ref(job.kernel)}: constexpr(s) {', '.join(unknown)} given, but the kernel has no "
                         f"such argument (its arguments: {', '.join(fn.arg_names)})")
    constexprs = {**module_constexprs(module, name, job.target, fn.arg_names),
                  **{k: v for k, v in tuned.items() if k in fn.arg_names},
                  **{k: constexpr_text.value(v) for k, v in job.constexprs.items()}}
    given = {**getattr(module, "SIGNATURE", {}), **job.signature}
    signature = {a: given[a] for a in fn.arg_names if a in given and a not in constexprs}
    check_complete(job.kernel, fn, signature, constexprs)
    options = {**module_options(module, job.target), **{k: v for k, v in tuned.items() if k not in fn.arg_names},
               **job.options}
    return Spec(job, fn, signature, constexprs, options, config)


def module_options(module, target: str) -> dict:
    """The module's ``options(target)`` and ``DIVISIBLE`` arguments, as ``hybrid.compile`` keywords."""
    defaults = getattr(module, "options", None)
    divisible = {"divisible": list(module.DIVISIBLE)} if getattr(module, "DIVISIBLE", ()) else {}
    return {**(defaults(target) if callable(defaults) else {}), **divisible}


def module_constexprs(module, kernel: str, target: str, arg_names) -> dict:
    """The module's ``constexprs(target)``, or ``constexprs(target, kernel)`` where it has a
    parameter named ``kernel`` (the kernel's name: values per kernel), keeping
    only the kernel's own arguments: a module's kernels may take different constexprs."""
    defaults = getattr(module, "constexprs", None)
    if not callable(defaults):
        return {}
    try:   # a parameter named ``kernel`` (others, with defaults, are the module's own business)
        per_kernel = "kernel" in inspect.signature(defaults).parameters
    except (TypeError, ValueError):
        per_kernel = False
    values = defaults(target, kernel=kernel) if per_kernel else defaults(target)
    return {k: v for k, v in (values or {}).items() if k in arg_names}


def check_complete(ref: str, fn, signature: dict, constexprs: dict) -> None:
    """Every argument of ``fn`` (the kernel ``ref`` names) has a type or a value, or the
    message says where each comes from."""
    constexpr_args = {fn.arg_names[i] for i in getattr(fn, "constexprs", ())}
    missing = [a for a in fn.arg_names if a not in signature and a not in constexprs]
    if not missing:
        return
    types = [a for a in missing if a not in constexpr_args]
    values = [a for a in missing if a in constexpr_args]
    parts = []
    if types:
        parts.append(f"no type for {', '.join(types)}: pass --signature {','.join(f'{a}=TYPE' for a in types)} "
                     f"(TYPE like *fp32 or i32) or define SIGNATURE = {{'{types[0]}': ..., ...}} in the module")
    if values:
        parts.append(f"no value for constexpr {', '.join(values)}: pass --constexpr {values[0]}=VALUE or define "
                     f"constexprs(target) in the module")
    raise ValueError(f"{display_ref(ref)}: " + "; ".join(parts))


def jit_kernels(module) -> list[str]:
    """Names of the module's own JIT functions and autotuned kernels (for a message)."""
    return sorted(n for n, v in vars(module).items()
                  if not n.startswith("_") and (hasattr(v, "arg_names") or isinstance(v, Autotuner)))


def display_ref(ref: str) -> str:
    """``ref`` as the user wrote it: a file path relative to the working directory where it can be."""
    module, _, name = ref.rpartition(":")
    return f"{display_path(module)}:{name}" if module.endswith(".py") else ref


def display_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def display_module(module) -> str:
    return display_path(module.__file__) if getattr(module, "__file__", None) else module.__name__


def _config(job: Job, configs: list):
    """The job's config (None for a kernel without configs)."""
    if job.config is None and not configs:
        return None
    if job.config is None or not 0 <= job.config < len(configs):
        raise LookupError(f"{job.label}: the kernel has {len(configs)} autotune config(s); plan its jobs with "
                          "scheduler.plan, one per config")
    return configs[job.config]
