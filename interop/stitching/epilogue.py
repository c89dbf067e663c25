"""A Triton host's store of a Gluon region's MFMA tile, made from that layout as Triton's AMD
backend makes it.

Triton's AMD pipeline removes the conversion in front of a store whose value comes from an MFMA
(or WMMA) layout: the store takes the pointers in that layout instead (``OptimizeEpilogue``, then
``RemoveLayoutConversions`` makes the pointer arithmetic in it). A Triton host whose stored value
is a Gluon region's result was laid out while the region was opaque, so its store kept the
conversion; once the region's MFMA result is connected and the boundary's conversion has moved
into the host's own conversion for the store (``sinking``), the same rewrite applies: the store
takes the unconverted value, and its pointer (and mask) tile is made again in the MFMA layout
(``remat``). Only that conversion is rewritten: it is Triton code's, whose layouts Triton chose.
"""
from __future__ import annotations

from .remat import Rematerializer

#: The layouts Triton's AMD backend stores from without a conversion.
_DOT_RESULT_LAYOUTS = ("#ttg.amd_mfma<", "#ttg.amd_wmma<")


def store_tiles(module, builder, conversion, source, users: dict[int, list]) -> list | None:
    """Where ``conversion`` (the op whose result the host stores: its own ``ttg.convert_layout``,
    or the boundary's conversion or the last cast after it, of a value that will be made in the
    layout of ``source``, a tensor) only feeds a ``tt.store`` as its value, that layout is an
    AMD dot layout, and the store's pointer and mask tiles are index arithmetic used by that
    store alone: those tiles made again in the dot layout (at the builder's insertion point), as
    ``(old, new)`` pairs for ``use``; else None. ``users`` maps value ids to their users."""
    stores = users.get(conversion.get_result(0).id(), [])
    if not any(name in str(source.get_type()) for name in _DOT_RESULT_LAYOUTS) or len(stores) != 1:
        return None
    store = stores[0]
    if store.get_name() != "tt.store" or store.get_operand(1).id() != conversion.get_result(0).id():
        return None
    tiles = [store.get_operand(i) for i in range(store.get_num_operands()) if i != 1]
    remat = Rematerializer(module, builder)
    if not all(len(users.get(t.id(), [])) == 1 and remat.possible(t) for t in tiles):
        return None
    layout = builder.get_gluon_layout_from_tensor(source)
    return [(tile, remat.make(tile, layout)) for tile in tiles]


def use(tiles: list, conversion, value) -> None:
    """The store takes ``value`` (unconverted, in the dot layout) and the ``tiles`` made for it."""
    for old, new in tiles:
        old.replace_all_uses_with(new)
    conversion.get_result(0).replace_all_uses_with(value)
