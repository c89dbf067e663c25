"""``FusedBinary.metadata``: Triton's kernel metadata, readable as Triton's own is."""
from __future__ import annotations


class KernelMetadata(dict):
    """Triton's metadata of a compiled kernel, by attribute and by key.

    Triton (3.6 through 3.9) gives ``CompiledKernel.metadata`` as a namedtuple of the metadata
    JSON's keys, sorted, with ``target`` a ``GPUTarget``; code written for Triton reads
    attributes (``.shared``, ``.num_warps``, ``.name``), ``_fields`` and ``_asdict()``. This is
    that record, in that order, and a dict as well (``md["shared"]``, ``md.get(...)``, JSON), so
    code written for either works. A key the backend does not write is an ``AttributeError``, as
    on the namedtuple (``hasattr(md, "tmem_size")``).
    """
    __slots__ = ()   # no attributes of its own: ``md.shared = 0`` fails, as on the namedtuple

    @classmethod
    def of(cls, metadata) -> KernelMetadata:
        """From Triton's namedtuple (or any mapping of its fields)."""
        fields = metadata._asdict() if hasattr(metadata, "_asdict") else dict(metadata)
        return cls(sorted(fields.items()))

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no field '{name}'") from None

    @property
    def _fields(self) -> tuple[str, ...]:
        return tuple(self)

    def _asdict(self) -> dict:
        return dict(self)
