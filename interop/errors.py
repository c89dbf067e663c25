"""The exceptions a kernel author sees for a mixed kernel that cannot be built."""
from __future__ import annotations

import contextlib
from typing import Iterator

from .triton.frontend import CompilationError
from .triton.language import core as tl


class RegionError(CompilationError):
    """A region could not be lowered, planned or stitched.

    Always names the called function, the call site (file:line) and what to do, so that a
    kernel author never has to read MLIR or a C++ backtrace to find the mistake. It derives
    from Triton's ``CompilationError`` so the host's code generator passes it through intact.
    """

    def __init__(self, function: str, call_site: str, reason: str, hint: str = ""):
        self.function = function
        self.call_site = call_site
        self.reason = reason
        self.hint = hint
        self.src = None
        self.node = None
        self.error_message = reason
        self.message = f"region '{function}' called at {call_site}: {reason}"
        if hint:
            self.message += f"\n  hint: {hint}"
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return type(self), (self.function, self.call_site, self.reason, self.hint)


def nested_region(function: str, call_site: str, enclosing: str) -> RegionError:
    """A Gluon function called from a Triton region's body (Gluon -> Triton -> Gluon): the
    compiler and the interpreter refuse it with this one error. ``enclosing`` names the Triton
    region and its call site."""
    return RegionError(function, call_site,
                       f"a Gluon function called inside the Triton region {enclosing}: regions do not nest "
                       "(Gluon -> Triton -> Gluon)",
                       f"call '{function}' from the Gluon code around that Triton region, or port the Triton "
                       "region to Gluon")


def host_descriptor_into_region(function: str, call_site: str, name: str, host: str, region: str) -> RegionError:
    """A Gluon host's TMA descriptor ``name`` passed into a Triton region that lays its loads'
    shared memory out in another layout than the host made the descriptor in (printed: ``host``,
    ``region``): the compiler and the interpreter refuse it with this one error, where the
    stitched kernel would not verify."""
    return RegionError(function, call_site,
                       f"the Gluon host's TMA descriptor '{name}' is {host}, and Triton lays the region's use of "
                       f"it out as {region}",
                       "make the descriptor in the layout Triton chooses for the region "
                       "(gl.NVMMASharedLayout.get_default_for(block_shape, dtype)), or issue the TMA copies in the "
                       "Gluon host")


class NoResultError(RegionError):
    """The result of a Triton region that returns nothing, used as a value."""


class NoResult(tl.constexpr):
    """What a call of a Triton region that returns nothing gives the code around it. Using it as
    a value (assigning it, storing it, passing it on) reads its ``value``, which raises the
    ``RegionError`` naming the region and its call site, where upstream says "cannot convert
    None" or "'NoneType' object has no attribute 'type'" at some later line."""

    def __init__(self, function: str, call_site: str):   # no constexpr.__init__: it would read the value
        self.function, self.call_site = function, call_site

    def _error(self) -> NoResultError:
        return NoResultError(self.function, self.call_site, "the Triton region returns nothing, but its result is "
                           "used as a value", "call it as a statement, or return the value from the Triton function")

    @property
    def value(self):
        raise self._error()

    @property
    def type(self):
        raise self._error()

    def __repr__(self) -> str:
        return f"NoResult({self.function!r}, {self.call_site!r})"


def describe(exc: Exception) -> str:
    """``exc``'s message, with the reason it was raised for: Triton's ``CompilationError`` for a
    failing builtin quotes the user's line but keeps the reason (``invalid axis 2``) only in its
    cause chain, under frames of Triton's own library code that the message leaves out."""
    text = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, CompilationError) or exc.error_message:
        return text
    cause = exc
    while cause.__cause__ is not None:
        cause = cause.__cause__
    if isinstance(cause, CompilationError):
        reason = (cause.error_message or "").strip()
    else:
        reason = f"{type(cause).__name__}: {str(cause).strip()}".rstrip(": ")
    return f"{text}\n{reason}" if reason and cause is not exc else text


@contextlib.contextmanager
def as_region_error(function: str, call_site, hint: str = "") -> Iterator[None]:
    """A failure in the block (Triton's ``CompilationError``, a pass pipeline's, ...) becomes a
    ``RegionError`` naming ``function`` and ``call_site``; one that already names a region passes."""
    try:
        yield
    except RegionError:
        raise
    except Exception as exc:
        raise RegionError(function, str(call_site), describe(exc), hint) from exc


class LayoutError(ValueError):
    """A layout the kernel author chose cannot run on the compile's target or warp count."""


class TargetError(CompilationError, ValueError):
    """Gluon code uses an op its target does not have (wgmma on sm100a, TMA on AMD, ...).

    Raised where the op is written, by the compiler and by the interpreter alike, with the op,
    the ``file:line in function`` and the targets that have it (``interop.targets.arch``). A
    ``CompilationError``, so that code generators pass it through intact.
    """

    def __init__(self, reason: str, hint: str = ""):
        self.reason, self.hint = reason, hint
        self.message = self.error_message = reason + (f"\n  hint: {hint}" if hint else "")
        self.src = self.node = None
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return type(self), (self.reason, self.hint)


class PointerDescriptorError(TargetError, AttributeError):
    """What a Gluon function reads off a tensor descriptor from Triton code where the target has no
    TMA, that the ``PointerDescriptor`` it takes there does not have (a TMA descriptor's ``layout``,
    ``dtype``, ``block_type``): the compiler and the interpreter name it alike, at the function's
    call site. An ``AttributeError`` too, so that ``hasattr`` reads it as absent."""

    def __init__(self, attribute: str):
        super().__init__(f"a tensor descriptor from Triton code has no '{attribute}' here: where the target has no "
                         "TMA (sm80, gfx942, gfx950) Triton lowers a descriptor to a pointer, shape and strides, and "
                         "a Gluon function takes it as a hybrid.PointerDescriptor (base, padding_nan, shape, "
                         "strides, block_shape)",
                         "load and store its blocks with hybrid.load_block(desc, offsets, layout) and "
                         "hybrid.store_block(desc, offsets, value): TMA copies on sm90a and sm100a, masked pointer "
                         "loads and stores elsewhere")
        self.attribute = attribute

    def __reduce__(self):
        return type(self), (self.attribute, )


#: what to do about an op the target lacks
ARCH_HINT = ("build this function only for targets that have the op (branch on a constexpr target in the "
             "caller), or use an op every target has")


def raised_within(exc: BaseException, kind: type) -> BaseException | None:
    """The first ``kind`` exception in ``exc``'s chain (a code generator wraps what a callee
    raised in a ``CompilationError`` of its own call site)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


class SharedMemoryError(ValueError):
    """A kernel needs more shared memory than its target has; says what each region allocates."""


def shared_memory_error(kernel: str, needs: int, target: str, limit: int, parts: list[str]) -> SharedMemoryError:
    """The refusal of a kernel over its target's shared memory, as the compiler and the interpreter
    both word it: the total and the limit, one line per part (``per region: ...``), the hint."""
    return SharedMemoryError(f"{kernel} needs {needs} B of shared memory; {target} has {limit} B.\n"
                             + "".join(f"  {part}\n" for part in parts)
                             + "  hint: shrink the largest buffers (block sizes, num_stages) or the tile behind a "
                               "layout conversion")


class RequestError(ValueError):
    """A compile or launch request that cannot be built as given: a signature, constexpr, option or
    target. Names the argument, the value and what is allowed (``interop.entry.request``)."""


class RequestTypeError(RequestError, TypeError):
    """A request argument of the wrong kind: a signature that is not a dict, a function that is
    not a JIT kernel, a number given as a string."""
