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

from dataclasses import dataclass
from itertools import product

import numpy as np
from triton.experimental.gluon import language as gl

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


def plan(builder, writer, readers: list, shape: list, bits: int) -> Plan:
    """The swizzled layout for a ``shape`` tile of ``bits``-bit elements that costs ``writer``
    (a distributed layout) and ``readers`` the fewest wavefronts; ties go to the simpler layout."""
    threads = [_thread_coords(linear(builder, layout, shape)) for layout in [writer, *readers]]
    nbytes = max(1, bits // 8)
    orders = [list(reversed(range(len(shape))))] + ([[0, 1]] if len(shape) == 2 else [])
    candidates = [gl.SwizzledSharedLayout(vec, per_phase, max_phase, order)
                  for order, vec, per_phase, max_phase in product(orders, _powers(16), (1, 2, 4, 8), _powers(16))
                  if (max_phase > 1 or (vec, per_phase) == (1, 1)) and vec * max_phase <= shape[order[0]]]
    costs = [[_accesses(_offsets(c, shape, t), nbytes) for t in threads] for c in candidates]
    best = min(range(len(candidates)), key=lambda i: (sum(w + n for w, n in costs[i]), costs[i][0][0], i))
    plain_costs = [_accesses(_offsets(plain(len(shape)), shape, t), nbytes)[0] for t in threads]
    waves = [w for w, _ in costs[best]]
    return Plan(candidates[best], waves[0], sum(waves[1:]), plain_costs[0], sum(plain_costs[1:]),
                sum(n for _, n in costs[best]))


def describe(chosen: Plan) -> str:
    """The plan as the boundary records state it."""
    return (f"a planned swizzle ({chosen.write} wavefronts per warp to write, {chosen.read} to read; "
            f"unswizzled: {chosen.plain_write} and {chosen.plain_read})")


def _powers(limit: int) -> list[int]:
    return [1 << k for k in range(limit.bit_length()) if 1 << k <= limit]


def _thread_coords(layout) -> np.ndarray:
    """``[register, lane, dim]``: the coordinate each lane of one warp holds in each register."""
    rank = len((layout.reg_bases or layout.lane_bases)[0])
    registers = np.array(span(layout.reg_bases, rank))
    lanes = np.array(span(layout.lane_bases, rank))
    return registers[:, None, :] ^ lanes[None, :, :]


def _offsets(layout, shape: list, coords: np.ndarray) -> np.ndarray:
    """Element offsets of ``coords`` in a swizzled shared layout (Triton's formula: the column
    group ``col // vec`` of each row is XORed with ``(row // per_phase) % max_phase``)."""
    order = list(layout.order)
    col = coords[..., order[0]]
    row = coords[..., order[1]] if len(order) > 1 else np.zeros_like(col)
    phase = (row // layout.per_phase) % layout.max_phase
    offsets = row * shape[order[0]] + ((col // layout.vec) ^ phase) * layout.vec + col % layout.vec
    stride = shape[order[0]] * (shape[order[1]] if len(order) > 1 else 1)
    for dim in order[2:]:
        offsets = offsets + coords[..., dim] * stride
        stride *= shape[dim]
    return offsets


def _accesses(offsets: np.ndarray, nbytes: int) -> tuple[int, int]:
    """(wavefronts, instructions) one warp needs to access its registers (``offsets[register,
    lane]``), each thread moving as many consecutive registers at once as are consecutive in
    shared memory (<= 16 B)."""
    registers, lanes = offsets.shape
    vec = 1
    while vec * 2 * nbytes <= 16 and registers % (vec * 2) == 0 and np.array_equal(
            offsets.reshape(-1, vec * 2, lanes), offsets.reshape(-1, vec * 2, lanes)[:, :1, :] +
            np.arange(vec * 2)[None, :, None]):
        vec *= 2
    per_wavefront = max(1, min(lanes, _WAVEFRONT // (vec * nbytes)))
    starts = offsets[::vec] * nbytes                                   # [group, lane] in bytes
    words = (starts[..., None] + np.arange(0, vec * nbytes, _WORD)[None, None, :]) // _WORD
    wavefront = (np.arange(starts.shape[0])[:, None] * -(-lanes // per_wavefront)
                 + np.arange(lanes)[None, :] // per_wavefront)         # [group, lane] -> wavefront id
    keys = np.unique(np.stack([np.broadcast_to(wavefront[..., None], words.shape), words], -1).reshape(-1, 2), axis=0)
    count = int(wavefront.max()) + 1
    per_bank = np.bincount(keys[:, 0] * _BANKS + keys[:, 1] % _BANKS, minlength=count * _BANKS)
    return int(per_bank.reshape(count, _BANKS).max(axis=1).sum()), registers // vec
