"""Per-region Proton scopes: ``proton.record`` start/end pairs placed after stitching.

Proton keeps Triton-level scopes off because tt->ttg passes move code across them. Here the
pairs are placed where the region's code lands after stitching, at the ttg level: around the
placeholder call in a Gluon host (no pass reorders a Gluon host before the region is inlined
between the two records) and around the Gluon call that replaces the boundary in a Triton
host (after Triton's passes have run). Scopes:

- ``r<index>:<function>`` around each region instance;
- ``kernel`` around the kernel's whole body, so each region's share of its warp's time is known;
- ``loop<k>[r0,r2]`` around a pipelined loop that holds those regions, when ``loops="total"``
  (the default): records between a pipelined loop's in-flight copies and waits would time the
  pipeline's stalls and add a shared-memory store to every iteration, so such a loop is timed
  as a whole. ``loops="iteration"`` keeps a pair around the region in every iteration.
  Regions in loops that are not pipelined keep their per-iteration pairs in both modes; the
  profile sums them per warp for ``total``.

It is on while Proton's instrumentation mode is (``proton.start(..., backend="instrumentation")``
sets the flag ``setting.current()`` reads), inside ``forced()``, or for a compile given
``instrument_regions=True``: the compile's ``setting.BuildSettings`` say so.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from .. import setting

KERNEL_SCOPE = "kernel"
#: Ops that wait on work a pipeliner left in flight across iterations.
_ASYNC_WAITS = ("ttg.async_wait", "ttng.warp_group_dot_wait", "ttng.wait_barrier", "ttng.async_tma_store_wait")


def forced(loop_timing: str | None = None) -> contextlib.AbstractContextManager:
    """Instrument regions in compiles given no setting in this block (``loop_timing``: one of
    ``setting.LOOP_TIMINGS``, or as around the block)."""
    return setting.using(instrument_regions=True, loops=loop_timing)


def scope_name(region) -> str:
    return f"r{region.index}:{region.function}"


def loop_scope_name(number: int, regions) -> str:
    return f"loop{number}[{','.join(f'r{r.index}' for r in sorted(regions, key=lambda r: r.index))}]"


@contextlib.contextmanager
def around(builder, region, on: bool) -> Iterator[None]:
    """``region``'s scope around what the block builds with ``builder`` (nothing unless ``on``)."""
    if on:
        record(builder, scope_name(region), start=True)
    yield
    if on:
        record(builder, scope_name(region), start=False)


def record(builder, name: str, start: bool) -> None:
    from ..triton.proton import triton_proton
    triton_proton.create_proton_record(builder, start, name)


def load_dialect(context) -> None:
    from ..triton.proton import triton_proton
    triton_proton.load_dialects(context)


# -- placement after stitching ------------------------------------------------------------------
@dataclass
class _Op:
    op: object
    parent: int | None       # id of the region holding it
    previous: object | None  # the op before it in its block


@dataclass
class _Tree:
    """A module's ops with their nesting (by region id); the bindings give no parent op."""
    ops: list[_Op]
    owner: dict[int, _Op]    # region id -> the op owning it

    @classmethod
    def of(cls, module) -> "_Tree":
        ops, last = [], {}

        def visit(op):   # post-order: nested ops come before their owner, earlier siblings before it
            block = op.get_block()
            here = block.id() if block is not None else None
            ops.append(_Op(op, block.get_parent().id() if block is not None else None, last.get(here)))
            if here is not None:
                last[here] = op

        module.walk(visit)
        return cls(ops, {o.op.get_region(i).id(): o for o in ops for i in range(o.op.get_num_regions())})

    def ancestors(self, region_id: int | None) -> Iterator[_Op]:
        while region_id in self.owner:
            parent = self.owner[region_id]
            yield parent
            region_id = parent.parent

    def pipelined(self) -> set[int]:
        """Body region ids of the ``scf.for`` loops a pipeliner transformed: they carry async
        tokens or buffers across iterations, or wait inside on work started earlier."""
        found = {o.op.get_region(0).id() for o in self.ops if o.op.get_name() == "scf.for" and any(
            marker in str(o.op.get_result(i).get_type())
            for i in range(o.op.get_num_results()) for marker in ("!ttg.async.token", "!ttg.memdesc"))}
        for o in self.ops:
            if o.op.get_name() in _ASYNC_WAITS:
                found.update(a.op.get_region(0).id() for a in self.ancestors(o.parent) if a.op.get_name() == "scf.for")
        return found

    def loops(self) -> list[int]:
        """The body region ids of the ``scf.for`` loops, in walk order."""
        return [o.op.get_region(0).id() for o in self.ops if o.op.get_name() == "scf.for"]

    def kernel(self) -> tuple[object, list[_Op]]:
        """The kernel's entry block and its returns."""
        body = next(o.op.get_region(0).id() for o in self.ops
                    if o.op.get_name() == "tt.func" and o.op.get_str_attr("sym_visibility") == "public")
        entry = next(o.op.get_block() for o in self.ops if o.parent == body)
        return entry, [o for o in self.ops if o.parent == body and o.op.get_name() == "tt.return"]


def pipelined_loop(tree: _Tree, op) -> int | None:
    """The body region id of the outermost pipelined loop around ``op`` (of the module ``tree``
    was made of), if any."""
    pipelined = tree.pipelined()
    loops = [a.op.get_region(0).id() for a in tree.ancestors(op.get_block().get_parent().id())
             if a.op.get_name() == "scf.for" and a.op.get_region(0).id() in pipelined]
    return loops[-1] if loops else None


class Scopes:
    """Where one compile's scopes go (``settings``: whether regions are instrumented, and how
    regions in pipelined loops are timed), and the pipelined loops timed whole so far."""

    def __init__(self, settings):
        self.on, self.loop_timing = settings.instrument_regions, settings.loops
        self.timed_loops: dict[int, list] = {}   # pipelined loop body region id -> the regions timed in it
        self._ordinals: dict[int, int] = {}      # such a region id -> its loop's place among the module's loops
        self._count = 0                          # the module's loops then

    def around_region(self, module, region, op) -> bool:
        """Whether ``region``'s instance at ``op`` gets its own scope; in a pipelined loop timed
        in total, the loop gets one instead (placed by ``bracket``)."""
        if not self.on:
            return False
        tree = _Tree.of(module) if self.loop_timing == "total" else None
        loop = pipelined_loop(tree, op) if tree is not None else None
        if loop is None:
            return True
        timed = self.timed_loops.setdefault(loop, [])
        if region.index not in {r.index for r in timed}:
            timed.append(region)
        loops = tree.loops()
        self._ordinals.setdefault(loop, loops.index(loop))
        self._count = len(loops)
        return False

    def relocate(self, module) -> None:
        """The timed loops found again, once Triton's layout passes have run on the host again
        (``host_relayout``): a pass that retypes a loop's carried values makes a new loop op, in
        the same place among the module's loops."""
        if self.timed_loops:
            loops = _Tree.of(module).loops()
            if len(loops) != self._count:   # (no pass adds or drops a loop there; a scope must not move)
                raise RuntimeError(f"the host has {len(loops)} loops after its layout passes, {self._count} before: "
                                   f"the pipelined loops timed whole cannot be found again")
            self.timed_loops = {loops[self._ordinals[loop]]: regions for loop, regions in self.timed_loops.items()}


def bracket(module, builder, timed_loops: dict[int, list]) -> None:
    """Add a scope around each pipelined loop in ``timed_loops`` (body region id -> the regions
    in it), then the kernel scope around everything."""
    for number, (loop, regions) in enumerate(sorted(timed_loops.items(), key=lambda item: min(
            r.index for r in item[1]))):
        owner = _Tree.of(module).owner[loop]   # afresh: an earlier loop's records may be its neighbours
        _before(builder, owner)
        record(builder, loop_scope_name(number, regions), start=True)
        builder.set_insertion_point_after(owner.op)
        record(builder, loop_scope_name(number, regions), start=False)
    entry, returns = _Tree.of(module).kernel()
    builder.set_insertion_point_to_start(entry)
    record(builder, KERNEL_SCOPE, start=True)
    for ret in returns:
        _before(builder, ret)
        record(builder, KERNEL_SCOPE, start=False)


def _before(builder, o: _Op) -> None:
    if o.previous is not None:
        builder.set_insertion_point_after(o.previous)
    else:
        builder.set_insertion_point_to_start(o.op.get_block())
