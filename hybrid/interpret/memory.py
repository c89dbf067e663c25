"""Shared and tensor memory as numpy arrays: an allocation is one array, descriptors are views.

A descriptor keeps its allocation (``root``) so that an mbarrier can be keyed by its address
(allocation, byte offset), however the program reached it (``index``, ``slice``, ...).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
