"""Shared and tensor memory as numpy arrays: an allocation is one array, descriptors are views.

A descriptor keeps its allocation (``root``) so that an mbarrier can be keyed by its address
(allocation, byte offset), however the program reached it (``index``, ``slice``, ...).

A program's shared allocations are counted against its target's shared memory
(``interop.targets.arch``), as the compiler counts a kernel's buffers, and refused past it with
the compiler's ``SharedMemoryError``: an allocation counts while the program holds it, and one
made again at the same line replaces the earlier (a loop's buffer is one buffer compiled).
The compiler's own scratch (layout conversions, pipelining) is not modelled, so the interpreter
refuses what is over the limit by explicit allocations alone: a kernel it runs may still fail
to compile.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from interop.errors import shared_memory_error
from interop.targets import arch
from interop.targets import name_of


@dataclass
class MemoryHandle:
    """The interpreter's value of a ``shared_memory_descriptor`` / tensor-memory descriptor."""
    data: np.ndarray       # a view into root
    root: np.ndarray
    dtype: object          # the Triton element type
    layout: object         # the Gluon layout of this view
    space: str = "shared"  # "shared" or "tensor"

    def view(self, data: np.ndarray, layout=None, dtype=None) -> "MemoryHandle":
        return MemoryHandle(data, self.root, dtype or self.dtype, layout if layout is not None else self.layout,
                            self.space)

    def key(self) -> tuple:
        """The address of this view's first element."""
        offset = self.data.__array_interface__["data"][0] - self.root.__array_interface__["data"][0]
        return id(self.root), offset

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    # Gluon calls these on handles in a few places (names, locations); they mean nothing here.
    def set_loc(self, loc) -> None:
        pass

    def get_loc(self):
        return None


def allocate(shape, np_dtype, dtype, layout, space: str = "shared") -> MemoryHandle:
    root = np.zeros(shape, dtype=np_dtype)
    return MemoryHandle(root, root, dtype, layout, space)


@dataclass
class Allocation:
    """One shared allocation a program holds."""
    root: weakref.ref      # the allocation's array, while anything holds it
    nbytes: int
    function: str          # the function that allocated it
    language: str          # "gluon" or "triton"


@dataclass
class SharedBudget:
    """The shared memory one program (CTA) holds, by allocation site (``file:line``)."""
    kernel: str
    target: object                                  # GPUTarget
    held: dict = field(default_factory=dict)       # site -> [Allocation]

    def add(self, root: np.ndarray, site: str, function: str, language: str) -> None:
        """Count ``root`` (allocated at ``site`` by ``function``); raise ``SharedMemoryError``
        when the program then holds more than the target has."""
        limit = arch.shared_memory_limit(self.target)
        if limit is None:
            return
        self.held[site] = [a for a in self.held.get(site, []) if a.root() is not None]
        self.held[site].append(Allocation(weakref.ref(root), root.nbytes, function, language))
        largest = {s: max((a for a in held if a.root() is not None), key=lambda a: a.nbytes, default=None)
                   for s, held in self.held.items()}
        largest = {s: a for s, a in largest.items() if a is not None}
        total = sum(a.nbytes for a in largest.values())
        if total > limit:
            parts = "; ".join(f"{a.function} ({a.language}, {s}): {a.nbytes} B" for s, a in largest.items())
            raise shared_memory_error(self.kernel, total, name_of(self.target), limit, [f"per allocation: {parts}"])
