"""A shared layout for a handoff that its writer and its readers access without bank conflicts.

Shared memory serves a warp's access in wavefronts of 128 bytes over 32 four-byte banks; two
threads of one wavefront touching different words of one bank serialize. Which words a warp
touches follows from the register layout (Triton's linear layout: register and lane bases give
each thread's coordinates) and the shared layout (a swizzled layout's offset of each
coordinate). ``plan`` counts the wavefronts and instructions of the writer's stores and each
reader's loads for a set of swizzled layouts and keeps the cheapest (the same model on AMD's
32-bank LDS).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import product

import numpy as np
from triton.experimental.gluon import language as gl

from .. import caches
from ..instrumentation import timing
from .movement import linear, span

_BANKS, _WORD, _WAVEFRONT = 32, 4, 128


@dataclass(frozen=True)
class Plan:
    layout: object          # the chosen gl.SwizzledSharedLayout
    write: int              # wavefronts per warp to store the tile in it
    read: int               # ... to load it, summed over the readers
    plain_write: int        # the same with the unswizzled layout, for the record
    plain_read: int
    issued: int             # shared-memory instructions per warp, the store and every load (vector width counts)

    @property
    def cost(self) -> int:
        """Wavefronts plus instructions per warp, writer and readers together (the planner's unit)."""
        return self.write + self.read + self.issued


def plain(rank: int) -> gl.SwizzledSharedLayout:
    """The unswizzled row-major layout (the placeholder until a plan is made)."""
    return gl.SwizzledSharedLayout(1, 1, 1, list(reversed(range(rank))))


@timing.timed("swizzle planning")
def plan(builder, writer, readers: list, shape: list, bits: int) -> Plan:
    """The swizzled layout for a ``shape`` tile of ``bits``-bit elements that costs ``writer``
    (a distributed layout) and ``readers`` the fewest wavefronts; ties go to the simpler layout."""
    candidates = _candidates(tuple(shape))
    tables = [_costs(*_thread_bases(linear(builder, layout, shape)), tuple(shape), max(1, bits // 8))
              for layout in [writer, *readers]]
    waves = np.stack([w for w, _ in tables])          # [thread layout, candidate]
    issued = np.stack([n for _, n in tables])
    total = (waves + issued).sum(axis=0)
    best = min(range(len(candidates)), key=lambda i: (int(total[i]), int(waves[0, i]), i))
    plain_waves = waves[:, 0]   # the first candidate is the unswizzled layout
    vec, per_phase, max_phase, order = candidates[best]
    return Plan(gl.SwizzledSharedLayout(vec, per_phase, max_phase, list(order)), int(waves[0, best]),
                int(waves[1:, best].sum()), int(plain_waves[0]), int(plain_waves[1:].sum()), int(issued[:, best].sum()))


def conflict_free(widths: tuple[int, ...], lanes: int) -> int:
    """Wavefronts plus instructions per warp of accesses of these byte widths (one thread's), each
    free of bank conflicts: a wavefront serves 128 bytes of a warp's lanes."""
    return sum(1 + max(1, lanes * width // _WAVEFRONT) for width in widths)


def describe(chosen: Plan) -> str:
    """The plan as the boundary records state it."""
    return (f"a planned swizzle ({chosen.write} wavefronts per warp to write, {chosen.read} to read; "
            f"unswizzled: {chosen.plain_write} and {chosen.plain_read})")


def _powers(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length()) if 1 << k <= limit]


@functools.lru_cache(maxsize=None)
def _candidates(shape: tuple) -> list[tuple]:
    """(vec, per_phase, max_phase, order) of every swizzled layout weighed, the unswizzled one first."""
    orders = [tuple(reversed(range(len(shape))))] + ([(0, 1)] if len(shape) == 2 else [])
    return [(vec, per_phase, max_phase, order)
            for order, vec, per_phase, max_phase in product(orders, _powers(16), (1, 2, 4, 8), _powers(16))
            if (max_phase > 1 or (vec, per_phase) == (1, 1)) and vec * max_phase <= shape[order[0]]]


def _thread_bases(layout) -> tuple[tuple, tuple]:
    """The register and lane bases of a linear layout, hashable (all one warp's accesses depend on)."""
    return tuple(map(tuple, layout.reg_bases)), tuple(map(tuple, layout.lane_bases))


@functools.lru_cache(maxsize=4096)
def _costs(reg_bases: tuple, lane_bases: tuple, shape: tuple, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate (``_candidates(shape)``): (wavefronts, instructions) one warp of the layout
    with these bases needs to access the tile. Cached: the same layouts meet again in the next
    compile, and in the conversion and handoff weighed for one value."""
    coords = _thread_coords(reg_bases, lane_bases)
    candidates = _candidates(shape)
    offsets = np.concatenate([_offsets([c for c in candidates if c[3] == order], shape, coords)
                              for order in dict.fromkeys(c[3] for c in candidates)])
    vec = _vector_widths(offsets, nbytes)
    waves = np.zeros(len(candidates), dtype=np.int64)
    for width in np.unique(vec):
        chosen = vec == width
        waves[chosen] = _wavefronts(offsets[chosen], int(width), nbytes)
    waves.flags.writeable = False   # shared by every caller: read only
    issued = offsets.shape[1] // vec
    issued.flags.writeable = False
    return waves, issued


caches.register(_costs.cache_clear)


def _thread_coords(reg_bases: tuple, lane_bases: tuple) -> np.ndarray:
    """``[register, lane, dim]``: the coordinate each lane of one warp holds in each register."""
    rank = len((reg_bases or lane_bases)[0])
    registers = np.array(span(reg_bases, rank), dtype=np.int32)
    lanes = np.array(span(lane_bases, rank), dtype=np.int32)
    return registers[:, None, :] ^ lanes[None, :, :]


def _offsets(candidates: list[tuple], shape: tuple, coords: np.ndarray) -> np.ndarray:
    """``[candidate, register, lane]``: element offsets of ``coords`` in swizzled shared layouts
    of one order (Triton's formula: the column group ``col // vec`` of each row is XORed with
    ``(row // per_phase) % max_phase``)."""
    vec, per_phase, max_phase = (np.array([c[k] for c in candidates], dtype=np.int32)[:, None, None] for k in range(3))
    order = candidates[0][3]
    col = coords[..., order[0]]
    row = coords[..., order[1]] if len(order) > 1 else np.zeros_like(col)
    phase = (row // per_phase) & (max_phase - 1)          # all powers of two
    offsets = row * shape[order[0]] + (((col // vec) ^ phase) * vec | col & (vec - 1))
    stride = shape[order[0]] * (shape[order[1]] if len(order) > 1 else 1)
    for dim in order[2:]:
        offsets = offsets + coords[..., dim] * stride
        stride *= shape[dim]
    return offsets


def _vector_widths(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    """Per candidate, how many consecutive registers each thread moves at once: as many as are
    consecutive in shared memory in every group (<= 16 B)."""
    count, registers, lanes = offsets.shape
    vec = np.ones(count, dtype=np.int64)
    still = np.ones(count, dtype=bool)
    width = 2
    while width * nbytes <= 16 and registers % width == 0:
        groups = offsets.reshape(count, -1, width, lanes)
        still &= (groups == groups[:, :, :1, :] + np.arange(width)[None, None, :, None]).all(axis=(1, 2, 3))
        vec[still] = width
        width *= 2
    return vec


def _wavefronts(offsets: np.ndarray, vec: int, nbytes: int) -> np.ndarray:
    """Per candidate, the wavefronts one warp needs when each thread moves ``vec`` registers at
    once: a wavefront serves 128 bytes of lanes, and distinct words of one bank serialize."""
    count, _, lanes = offsets.shape
    per_wavefront = max(1, min(lanes, _WAVEFRONT // (vec * nbytes)))    # lanes served by one wavefront
    starts = offsets[:, ::vec] * nbytes                                 # [candidate, group, lane] in bytes
    words = (starts[..., None] + np.arange(0, vec * nbytes, _WORD, dtype=np.int32)) // _WORD
    rows = np.sort(words.reshape(-1, per_wavefront * words.shape[-1]), axis=1)   # one row of words per wavefront
    distinct = np.ones(rows.shape, dtype=bool)
    distinct[:, 1:] = rows[:, 1:] != rows[:, :-1]
    wavefront = np.broadcast_to(np.arange(rows.shape[0])[:, None], rows.shape)
    per_bank = np.bincount((wavefront * _BANKS + (rows & (_BANKS - 1)))[distinct], minlength=rows.shape[0] * _BANKS)
    return per_bank.reshape(count, -1, _BANKS).max(axis=2).sum(axis=1)
