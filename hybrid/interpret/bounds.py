"""Global-memory accesses checked against the launch's tensors before numpy touches them.

Upstream's interpreter turns a pointer tile into raw host addresses and reads or writes them in
C++: an access past a tensor reads another object's bytes, or kills the process with SIGSEGV and
no message. Here every load, store, atomic, buffer op, cp.async and TMA copy is checked first:
each active lane (mask on) must address an element inside the storage of one of the launch's
tensor arguments (the whole torch storage, so a view may reach the rest of its base tensor, as
on the GPU). Masked-off lanes are never checked. The check is two numpy reductions (min, max of
the active addresses) when all of them fall in one storage, the usual case.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from . import program as prog
from .errors import InterpretError, user_site


class OutOfBoundsError(InterpretError):
    """An access whose active lane addresses no element of the launch's tensors."""


@dataclass(frozen=True)
class Span:
    """The bytes of one argument's storage, and where its element 0 is."""
    name: str     # the kernel argument ("x_ptr", "desc.base")
    start: int    # first byte of the storage
    end: int      # one past its last byte
    base: int     # address of the argument's element 0 (data_ptr)


@dataclass(frozen=True)
class Storages:
    """The storages a launch may access, ordered by address."""
    spans: tuple[Span, ...]

    @classmethod
    def of(cls, arguments: dict) -> "Storages":
        """The storages of the (host copies of the) launch's tensor and descriptor arguments."""
        spans = [span for name, value in arguments.items() for span in _spans(name, value)]
        return cls(tuple(sorted(set(spans), key=lambda s: (s.start, s.end))))

    def outside(self, addresses: np.ndarray, element_bytes: int) -> int | None:
        """The first of ``addresses`` (a flat uint64 array) whose element lies outside every
        storage, or None."""
        if addresses.size == 0:
            return None
        low, high = int(addresses.min()), int(addresses.max())
        at = bisect.bisect_right([s.start for s in self.spans], low) - 1
        if at >= 0 and high + element_bytes <= self.spans[at].end:
            return None
        if not self.spans:
            return int(addresses[0])
        starts = np.array([s.start for s in self.spans], dtype=np.uint64)
        ends = np.array([s.end for s in self.spans], dtype=np.uint64)
        index = np.searchsorted(starts, addresses, side="right").astype(np.int64) - 1
        inside = (index >= 0) & (addresses + np.uint64(element_bytes) <= ends[np.maximum(index, 0)])
        return None if inside.all() else int(addresses[~inside][0])

    def describe(self, address: int, element_bytes: int, what: str, argument: str | None) -> str:
        """The report of an access at ``address``, as an element offset of ``argument`` (the
        argument the pointer was computed from, where known) or of the nearest storage."""
        pid = tuple(prog.current_frame().semantic.builder.grid_idx)
        where = f"out-of-bounds {what} at {user_site()} (program {pid})"
        named = [s for s in self.spans if s.name == argument]
        if not (named or self.spans):
            return f"{where}: address {address:#x}, and the launch passed no tensor\n  hint: pass the tensor it reads"
        span = named[0] if named else min(self.spans, key=lambda s: _distance(address, s))
        first, last = (span.start - span.base) // element_bytes, (span.end - span.base) // element_bytes - 1
        return (f"{where}: element offset {(address - span.base) // element_bytes} of '{span.name}', whose storage "
                f"holds elements {first}..{last}\n  hint: mask the access (mask=offs < n), or check the offsets "
                "and strides")


#: ``TensorHandle.attr`` key of the kernel argument a pointer was computed from
ARGUMENT = "hybrid.argument"


def derived(result, source):
    """``result`` (a handle made from the pointer ``source``) noting the argument ``source`` came from."""
    if ARGUMENT in getattr(source, "attr", {}) and hasattr(result, "attr"):
        result.attr[ARGUMENT] = source.attr[ARGUMENT]
    return result


def mark_argument(handle, name: str):
    """``handle`` (a pointer argument's) marked as the kernel argument ``name``."""
    handle.attr[ARGUMENT] = name
    return handle


def check(ptrs, mask, what: str) -> None:
    """Refuse ``what`` (a load, store, atomic...) through the pointer handle ``ptrs`` where an
    active lane (``mask``: a handle, an array, or None for all) addresses no element of the
    running launch's tensors."""
    check_addresses(ptrs.data, getattr(mask, "data", mask), ptrs.get_element_ty(), what, ptrs.attr.get(ARGUMENT))


def check_addresses(addresses: np.ndarray, mask, element_ty, what: str, argument: str | None = None) -> None:
    """``check`` for raw addresses of ``element_ty`` elements."""
    active = np.asarray(addresses, dtype=np.uint64)
    if mask is not None:
        active = active[np.broadcast_to(np.asarray(mask, dtype=bool), active.shape)]
    storages, element_bytes = prog.program().storages, max(1, element_ty.primitive_bitwidth // 8)
    address = storages.outside(active.reshape(-1), element_bytes)
    if address is not None:
        raise OutOfBoundsError(storages.describe(address, element_bytes, what, argument))


def _distance(address: int, span: Span) -> int:
    return 0 if span.start <= address < span.end else min(abs(address - span.start), abs(address - span.end))


def _spans(name: str, value) -> list[Span]:
    if isinstance(value, (tuple, list)):
        return [s for i, item in enumerate(value) for s in _spans(f"{name}[{i}]", item)]
    if hasattr(value, "untyped_storage") and hasattr(value, "data_ptr"):
        storage = value.untyped_storage()
        start = storage.data_ptr()
        return [Span(name, start, start + storage.nbytes(), value.data_ptr())]
    base = getattr(value, "base", None)   # a tensor descriptor (Triton's or Gluon's host one)
    return _spans(f"{name}.base", base) if hasattr(base, "untyped_storage") else []
