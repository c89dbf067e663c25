"""Build planning: a job is one (kernel, specialization, options, target), as plain data.

Jobs hold only names and JSON values, so any executor can ship them to another process or
machine; the worker imports the kernel itself. A kernel's module may provide defaults that the
command line cannot spell: ``SIGNATURE`` (a dict), ``constexprs(target)`` (for example
target-specific layouts), ``options(target)`` (``num_warps``, ``num_stages``) and ``DIVISIBLE``
(integer arguments a launch specializes as multiples of 16); values given in the job override
them, and options named nowhere take the backend's own defaults for the target, as a JIT launch's
do (``hybrid.compile``).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from interop.targets import TARGETS

def canonical_json(value) -> str:
    """The one serialization every key and checksum is taken over (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sha256_json(value) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


@dataclass(frozen=True)
class Job:
    kernel: str                                      # "path/to/module.py:name" or "package.module:name"
    target: str
    signature: dict = field(default_factory=dict)    # argument name -> Triton type, over the module's SIGNATURE
    constexprs: dict = field(default_factory=dict)   # JSON values, over the module's constexprs(target)
    options: dict = field(default_factory=dict)      # hybrid.compile keywords (num_warps, num_stages, ...)

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def id(self) -> str:
        """Deterministic name of the job as asked for (the cache key also covers the sources)."""
        return sha256_json(self.to_json())[:16]

    @property
    def label(self) -> str:
        return f"{self.kernel} [{self.target}]"


@dataclass
class Spec:
    """A job resolved against its module: exactly what ``hybrid.compile`` receives."""
    job: Job
    fn: object                 # the @hybrid.jit kernel
    signature: dict            # non-constexpr arguments, in the kernel's argument order
    constexprs: dict
    options: dict

    @property
    def constexprs_json(self) -> dict:
        """Constexpr values as JSON: plain values stay, others (layouts) by their deterministic repr."""
        return {k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v)
                for k, v in sorted(self.constexprs.items())}


def expand_targets(targets) -> list[str]:
    """``"all"`` or names (a list or a comma-separated string) -> validated target names."""
    names = targets.split(",") if isinstance(targets, str) else list(targets)
    if "all" in names:
        return list(TARGETS)
    unknown = [t for t in names if t not in TARGETS]
    if unknown or not names:
        raise ValueError(f"unknown target(s) {', '.join(unknown) or '(none given)'}; "
                         f"expected 'all' or some of {', '.join(TARGETS)}")
    return list(dict.fromkeys(names))


def plan(kernels: list[str], targets, signature: dict | None = None, constexprs: dict | None = None,
         options: dict | None = None) -> list[Job]:
    """Every (kernel, target) job, kernel-major; path references are made absolute."""
    return [Job(absolute_ref(k), t, dict(signature or {}), dict(constexprs or {}), dict(options or {}))
            for k in kernels for t in expand_targets(targets)]


def absolute_ref(ref: str) -> str:
    module, sep, name = ref.rpartition(":")
    if not sep or not module or not name:
        raise ValueError(f"kernel reference {ref!r}: expected 'path/to/module.py:kernel' or 'package.module:kernel'")
    return f"{Path(module).resolve()}:{name}" if module.endswith(".py") else ref


def load_module(ref: str):
    """Import the module of ``ref``. A file is executed afresh every time (an edited kernel is
    seen by the next plan) with its folder on ``sys.path``, as ``python path/to/module.py`` would."""
    module_ref = ref.rpartition(":")[0]
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


def resolve(job: Job) -> Spec:
    module = load_module(job.kernel)
    name = job.kernel.rpartition(":")[2]
    fn = getattr(module, name, None)
    if fn is None or not hasattr(fn, "arg_names"):
        raise LookupError(f"{job.kernel}: no JIT kernel named '{name}' in {module.__name__}")
    defaults = getattr(module, "constexprs", None)
    constexprs = {**(defaults(job.target) if callable(defaults) else {}), **job.constexprs}
    given = {**getattr(module, "SIGNATURE", {}), **job.signature}
    signature = {a: given[a] for a in fn.arg_names if a in given and a not in constexprs}
    module_options = getattr(module, "options", None)
    divisible = {"divisible": list(module.DIVISIBLE)} if getattr(module, "DIVISIBLE", ()) else {}
    options = {**(module_options(job.target) if callable(module_options) else {}), **divisible,
               **job.options}
    return Spec(job, fn, signature, constexprs, options)
