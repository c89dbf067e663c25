"""One validation of a compile or launch request: the kernel, its signature and constexprs, the
backend options and the target.

``hybrid.compile``, the interpreter's launch and the ``hybrid`` command all check a request here
before any code is generated, so the same mistake gets the same error everywhere, naming the
argument and what is allowed, where upstream would raise ``KeyError: 'fp99'``, a bare
``AssertionError`` or silently drop a misspelt option.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping

from triton.backends.compiler import GPUTarget
from triton.runtime import JITFunction

from ..targets import arch
from ..errors import RequestError, RequestTypeError
from ..targets import TARGETS, resolve
from ..triton.frontend import make_backend
from ..validate import definition

#: scalar type names a signature may use (``*`` before one is a pointer, ``*k`` a const pointer)
SCALAR_TYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e4b8", "fp8e5",
                "fp8e5b16", "fp8e4b15", "fp16", "bf16", "fp32", "fp64")
#: options a launch takes besides the backend's compile options (upstream's JIT reads them on every backend)
LAUNCH_ONLY = ("launch_cooperative_grid", "launch_pdl")


def check_kernel(kernel) -> JITFunction:
    """``kernel`` itself: a ``@triton.jit``/``@gluon.jit`` (or ``@hybrid.jit``) function."""
    if not isinstance(kernel, JITFunction):
        what = getattr(kernel, "__name__", None) or type(kernel).__name__
        raise RequestTypeError(f"kernel: {what!s} is not a JIT kernel; decorate it with @hybrid.jit over "
                               "@gluon.jit or @triton.jit")
    return kernel


def check_target(target, kernel: JITFunction | None = None) -> GPUTarget:
    """The ``GPUTarget`` for a target or GPU name (``interop.targets.resolve``) or a ``GPUTarget``
    whose warp size is its backend's; an error names ``kernel`` (its name and ``file:line``) where
    one is given."""
    where = f"{kernel_site(kernel)}: " if kernel is not None else ""
    if isinstance(target, GPUTarget):
        expected = arch.WARP_SIZE.get(target.backend)
        if expected is None:
            raise RequestError(f"{where}target={target!r}: unknown backend {target.backend!r}; "
                               f"expected one of {', '.join(arch.WARP_SIZE)}")
        if target.warp_size != expected:
            raise RequestError(f"{where}target={target!r}: {target.backend} runs {expected}-thread warps, not "
                               f"{target.warp_size}; use GPUTarget({target.backend!r}, {target.arch!r}, {expected})")
        return target
    if not isinstance(target, str) or not target:
        raise RequestTypeError(f"{where}target={target!r}: expected one of {', '.join(TARGETS)}, a GPU name or a "
                               f"GPUTarget")
    try:
        return resolve(target)
    except ValueError as exc:
        raise RequestError(f"{where}target={target!r}: {exc}") from None


def kernel_site(kernel: JITFunction) -> str:
    """``name (file:line)`` of a kernel, as its request errors start (layout errors do the same)."""
    return f"{kernel.__name__} ({definition(kernel)})"


def check_constexprs(kernel: JITFunction, constexprs: Mapping) -> None:
    """Every constexpr names an argument of ``kernel``; no number is given as a string."""
    if not isinstance(constexprs, Mapping):
        raise RequestTypeError(f"constexprs={constexprs!r}: expected a dict of argument name -> value")
    for name, value in constexprs.items():
        if name not in kernel.arg_names:
            raise RequestError(f"constexpr {name!r}: {kernel.__name__} has no such argument{_close(name, kernel.arg_names)}"
                               f"; its arguments are {', '.join(kernel.arg_names)}")
        check_constexpr_value(name, value)


def check_constexpr_value(name: str, value) -> None:
    """A number written as a string (``BLOCK="256"``) is refused: as a constexpr it would be a
    string, which ``tl.arange`` and every shape reject deep inside code generation."""
    if isinstance(value, str) and _number(value) is not None:
        raise RequestTypeError(f"constexpr {name}={value!r} is a string; give the number: {name}={_number(value)!r}")


def check_signature(kernel: JITFunction, signature: Mapping, constexprs: Mapping) -> None:
    """Every signature entry names an argument and a Triton type; every argument has a type or a value."""
    if not isinstance(signature, Mapping):
        raise RequestTypeError(f"signature={signature!r}: expected a dict of argument name -> type string, "
                               "e.g. {'x_ptr': '*fp32', 'n': 'i32'}")
    for name, ty in signature.items():
        if name not in kernel.arg_names:
            raise RequestError(f"signature entry {name!r}: {kernel.__name__} has no such argument"
                               f"{_close(name, kernel.arg_names)}; its arguments are {', '.join(kernel.arg_names)}")
        if name not in constexprs or ty != "constexpr":
            check_type(name, ty)
    missing = [name for name in kernel.arg_names if name not in signature and name not in constexprs]
    if missing:
        raise RequestTypeError(f"{kernel.__name__}: no signature or constexpr value for argument(s) "
                               f"{', '.join(missing)}")


def check_type(name: str, ty) -> None:
    """``ty`` is a type string Triton's signature parser accepts."""
    if isinstance(ty, tuple):
        for item in ty:
            check_type(name, item)
        return
    if not isinstance(ty, str) or not ty:
        raise RequestTypeError(f"signature[{name!r}]={ty!r}: expected a type string such as '*fp32', 'i32' or "
                               "'constexpr'")
    if ty == "constexpr" or ty.startswith("tensordesc") or ty == "nvTmaDesc":
        return
    scalar = element(ty)
    if scalar not in SCALAR_TYPES:
        raise RequestError(f"signature[{name!r}]={ty!r}: unknown type {scalar!r}{_close(scalar, SCALAR_TYPES)}; "
                           f"expected one of {', '.join(SCALAR_TYPES)}, '*' before one for a pointer, or 'constexpr'")


def check_dtypes(kernel: JITFunction, signature: Mapping, target: GPUTarget) -> None:
    """Element types the target has (``interop.targets.arch``'s dtype rows), as the compiler needs
    them; an error names the kernel and the argument."""
    for name, ty in signature.items():
        if isinstance(ty, str):
            arch.check_dtype(element(ty), target, f"{kernel_site(kernel)}, argument {name!r} ({ty})")


def backend_options(target: GPUTarget) -> tuple[str, ...]:
    """The option names the target's backend takes (its options dataclass)."""
    return tuple(f.name for f in dataclasses.fields(make_backend(target).parse_options({})))


def check_options(options: Mapping, target: GPUTarget) -> dict:
    """``options`` checked against the backend's: known names (a typo gets the close match),
    ``num_warps`` and ``num_ctas`` powers of two within the target's limits, ``num_stages >= 0``."""
    known = sorted(set(backend_options(target) + LAUNCH_ONLY))
    for name in options:
        if name not in known:
            raise RequestError(f"option {name}={options[name]!r}: not an option of the {target.backend} backend"
                               f"{_close(name, known)}; options are {', '.join(known)}")
    if options.get("num_warps") is not None:
        _power_of_two("num_warps", options["num_warps"], arch.max_warps(target),
                      f"{arch.target_label(target)} runs at most {arch.max_warps(target)} warps per CTA")
    if options.get("num_ctas") is not None:
        _power_of_two("num_ctas", options["num_ctas"], 16, "a cluster has at most 16 CTAs")
    stages = options.get("num_stages")
    if stages is not None and (not _is_int(stages) or stages < 0):
        raise RequestError(f"option num_stages={stages!r}: expected an integer >= 0 (pipeline depth of loops)")
    return dict(options)


def check_request(kernel, signature: Mapping, constexprs: Mapping, target, options: Mapping) -> GPUTarget:
    """The whole compile request (``hybrid.compile``): returns the resolved target."""
    kernel = check_kernel(kernel)
    gpu_target = check_target(target, kernel)
    check_constexprs(kernel, constexprs)
    check_signature(kernel, signature, constexprs)
    check_dtypes(kernel, {k: v for k, v in signature.items() if k not in constexprs}, gpu_target)
    check_options(options, gpu_target)
    return gpu_target


def _power_of_two(name: str, value, limit: int, why: str) -> None:
    if not _is_int(value) or value < 1 or value & (value - 1) or value > limit:
        allowed = ", ".join(str(1 << i) for i in range(limit.bit_length()))
        raise RequestError(f"option {name}={value!r}: expected a power of two from 1 to {limit} ({allowed}); {why}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(text: str) -> int | float | None:
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    return None


def _close(word: str, choices) -> str:
    match = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def element(ty: str) -> str:
    """The scalar type a signature type names: ``*kfp16`` -> ``fp16``."""
    scalar = ty.lstrip("*")
    if scalar != ty and scalar.startswith("k") and scalar[1:] in SCALAR_TYPES:
        return scalar[1:]
    return scalar
