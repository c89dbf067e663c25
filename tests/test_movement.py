"""What a layout conversion moves (``interop.boundaries.movement``), checked against the instructions
Triton emits for that very conversion in a one-conversion Gluon kernel."""
import math
import re

import pytest
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop.boundaries import movement
from interop.boundaries.scratch import ScratchProbe
from interop.targets import TARGETS
from interop.triton.bindings import gluon_ir, ir
from interop.triton.frontend import GluonASTSource, make_backend

pytestmark = pytest.mark.version

M, N = 32, 64
PAIRS = {   # name -> (source layout, result layout) for 4 warps of 32 threads
    "same": (gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])),
    "register order": (gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), gl.BlockedLayout([1, 4], [4, 8], [4, 1], [0, 1])),
    "narrower vectors": (gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), gl.BlockedLayout([1, 2], [4, 8], [4, 1], [1, 0])),
    "lanes": (gl.BlockedLayout([1, 4], [4, 8], [1, 4], [1, 0]), gl.BlockedLayout([1, 4], [8, 4], [1, 4], [1, 0])),
    "warps": (gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), gl.BlockedLayout([1, 4], [4, 8], [1, 4], [1, 0])),
}


@gluon.jit
def convert(x_ptr, y_ptr, A: gl.constexpr, B: gl.constexpr, M: gl.constexpr, N: gl.constexpr):
    rows = gl.arange(0, M, layout=gl.SliceLayout(1, A))
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, A))
    y = gl.convert_layout(gl.load(x_ptr + rows[:, None] * N + cols[None, :]), B)
    rows = gl.arange(0, M, layout=gl.SliceLayout(1, B))
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, B))
    gl.store(y_ptr + rows[:, None] * N + cols[None, :], y)


@pytest.fixture(scope="module")
def builder():
    context = ir.context()
    ir.load_dialects(context)
    return context, gluon_ir.GluonOpBuilder(context)


def compiled_ptx_and_shared(a, b) -> tuple[str, int]:
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "A": "constexpr", "B": "constexpr", "M": "constexpr",
                 "N": "constexpr"}
    kernel = triton.compile(GluonASTSource(convert, signature, {"A": a, "B": b, "M": M, "N": N}),
                            target=TARGETS["sm90a"])
    return kernel.asm["ptx"], kernel.metadata.shared


def register_permuted(builder, layout):
    """``layout`` with each thread's registers in another order: the same elements per thread."""
    linear = builder.to_linear_layout(layout._to_ir(builder), [M, N])
    return gl.DistributedLinearLayout(list(reversed(linear.reg_bases)), linear.lane_bases, linear.warp_bases,
                                      linear.block_bases, [M, N])


@pytest.mark.parametrize("name", [*PAIRS, "registers permuted"])
def test_prediction_matches_the_instructions_triton_emits(builder, name):
    """Kind, shuffles, scratch bytes (Triton's own allocation, ``ScratchProbe``) and barriers
    (two per round, less one) against the PTX and metadata of the compiled conversion."""
    context, gluon_builder = builder
    a, b = PAIRS[name] if name in PAIRS else (PAIRS["same"][0], register_permuted(gluon_builder, PAIRS["same"][0]))
    predicted = movement.between(gluon_builder, a, b, [M, N], 32)
    if predicted.kind == "shared":
        target = TARGETS["sm90a"]
        probe = ScratchProbe(context, target, make_backend(target).parse_options({"num_warps": 4}))
        scratch = probe.conversion_bytes(gl.distributed_type(gl.float32, [M, N], a).to_ir(gluon_builder),
                                         gl.distributed_type(gl.float32, [M, N], b).to_ir(gluon_builder))
        predicted = movement._round_trip(M * N * 4, scratch)
    ptx, shared = compiled_ptx_and_shared(a, b)
    assert ptx.count("shfl.sync") == predicted.shuffles, (name, predicted)
    assert ("st.shared" in ptx or "stmatrix" in ptx) == (predicted.kind == "shared") == (shared > 0), (name, predicted)
    assert (predicted.shared_bytes, predicted.barriers) == (shared, ptx.count("bar.sync")), (name, predicted)
    expected = {"same": "none", "registers permuted": "registers", "lanes": "shared", "warps": "shared"}
    assert predicted.kind == expected.get(name, "shuffles")


#: a shared-memory access in PTX: (st|ld).shared[::cta][.vN].<type><bits>, or an stmatrix/ldmatrix of N matrices
_PTX_SHARED = re.compile(r"\b(?:st|ld)\.shared(?:::cta)?(?:\.v(\d))?\.[a-z]+(\d+)|\b(?:st|ld)matrix\.[\w.]*?\.x(\d)\b")
#: sm80's MMA tile and a layout holding one column of it per thread (the columns 1, 8, 16 and 32
#: apart are registers of both: Triton's scratch vectorizes over them; a swizzled layout cannot)
MMA_V2 = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])
COLUMN_PER_THREAD = gl.BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])


def ptx_shared_widths(ptx: str) -> list[int]:
    """The byte widths of the shared-memory accesses in ``ptx``, one thread's."""
    return sorted(4 * int(matrices) if matrices else int(vector or 1) * int(bits) // 8
                  for vector, bits, matrices in _PTX_SHARED.findall(ptx))


@pytest.mark.parametrize("target, name", [("sm90a", "lanes"), ("sm90a", "warps"), ("sm80", "mma column")])
def test_the_probe_counts_the_shared_accesses_triton_emits_for_a_conversion(builder, target, name):
    """``ScratchProbe.conversion_accesses`` (the conversion alone, lowered to LLVM by the backend's
    passes) against the PTX of the one-conversion kernel: the same shared-memory stores and loads,
    every element stored and loaded (a layout that holds it twice, twice); on sm80's MMA tile they
    are 16 B wide, wider than the 8 B a swizzled layout's contiguous columns give its two adjacent
    elements."""
    context, gluon_builder = builder
    a, b = PAIRS[name] if name in PAIRS else (MMA_V2, COLUMN_PER_THREAD)
    shape = [M, N] if name in PAIRS else [64, 64]
    backend = make_backend(TARGETS[target])
    backend.load_dialects(context)
    types = [gl.distributed_type(gl.float32, shape, layout).to_ir(gluon_builder) for layout in (a, b)]
    function = gluon_builder.get_or_insert_function(gluon_builder.create_module(), "f",
                                                    gluon_builder.get_function_ty(types[:1], []), "public", False)
    gluon_builder.set_insertion_point_to_start(function.add_entry_block())
    converted = gluon_builder.create_convert_layout(types[1], function.args(0))
    probe = ScratchProbe(context, TARGETS[target], backend.parse_options({"num_warps": 4}))
    widths = probe.conversion_accesses(function.args(0), converted, gl.float32)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "A": "constexpr", "B": "constexpr", "M": "constexpr",
                 "N": "constexpr"}
    ptx = triton.compile(GluonASTSource(convert, signature, {"A": a, "B": b, "M": shape[0], "N": shape[1]}),
                         target=TARGETS[target]).asm["ptx"]
    assert sorted(widths) == ptx_shared_widths(ptx), (name, widths)
    assert sum(widths) >= 2 * 4 * math.prod(shape) // 128   # every fp32 element stored and loaded (copies too)
    if name == "mma column":
        assert set(widths) == {16}


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_boundary_records_say_what_their_conversions_move(target):
    from tests import kernels
    kernel, signature, constexprs = kernels.cases(target)["store_unconverted"]
    fb = hybrid.compile(kernel, signature, constexprs, target=target, boundaries="convert")
    for b in fb.boundaries:
        if not b.conversions:
            assert (b.movement, b.shared_bytes, b.barriers) == ("none", 0, 0), b
            continue
        assert b.movement != "none" and (b.reason.endswith(f"({b.movement})") or "Triton's conversion" in b.reason), b
        if b.movement == "shared":   # Triton's scratch for the tile: all of it, or a part moved in rounds
            assert 0 < b.shared_bytes <= b.conversions * 4 * math.prod(b.shape), b
            assert b.barriers >= b.conversions and b.barriers % 2 == b.conversions % 2, b
    assert any(b.movement == "shared" for b in fb.boundaries)


@pytest.mark.parametrize("rows, expected", [(1, 0), (M, 1)])
def test_moving_conversions_leave_out_layouts_that_place_alike(rows, expected):
    """Over a one-row tile, a [4, 1] and a [1, 1] blocked layout (4 warps along the rows) place
    every element alike: Triton keeps the ``convert_layout`` but emits nothing for it, and
    ``moving_conversions`` does not count it; over 32 rows they differ and it does."""
    from interop.instrumentation.resources import layout_conversions
    a, b = gl.BlockedLayout([4, 1], [1, 32], [4, 1], [1, 0]), gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "A": "constexpr", "B": "constexpr", "M": "constexpr",
                 "N": "constexpr"}
    kernel = triton.compile(GluonASTSource(convert, signature, {"A": a, "B": b, "M": rows, "N": N}),
                            target=TARGETS["sm90a"])
    assert layout_conversions(kernel.asm["ttgir"]) == 1
    assert movement.moving_conversions(kernel.asm["ttgir"], "sm90a") == expected
    assert ("shfl.sync" in kernel.asm["ptx"] or kernel.metadata.shared > 0) == bool(expected)


def test_a_linear_layout_of_a_larger_tile_broadcasts_past_the_shape(builder):
    """Triton's AMD passes type a ``128x1`` column with the ``128x64`` tile's linear layout (a
    persistent matmul's row offsets, gfx950): the bases past the column's one element broadcast,
    as Triton's ``ensureLayoutNotLargerThan`` makes them, where they used to index past the tile."""
    _, gluon_builder = builder
    tile = gl.DistributedLinearLayout([[0, 1], [0, 2], [0, 4], [4, 0], [8, 0]],
                                      [[0, 8], [0, 16], [0, 32], [64, 0], [32, 0], [16, 0]], [[1, 0], [2, 0]], [],
                                      [128, 64])
    column = gl.DistributedLinearLayout([[4, 0], [8, 0]], [[0, 0], [0, 0], [0, 0], [64, 0], [32, 0], [16, 0]],
                                        [[1, 0], [2, 0]], [], [128, 1])
    assert movement.linear(gluon_builder, tile, [128, 1]).reg_bases == [[0, 0], [0, 0], [0, 0], [4, 0], [8, 0]]
    assert movement.between(gluon_builder, column, tile, [128, 1], 64).kind == "registers"


def test_a_layout_pair_weighed_again_is_not_placed_again(builder, monkeypatch):
    """``between`` places each layout's elements (``holders``) once per pair and shape: the host's
    layout trials (``host_relayout``) and the planner weigh the same pairs again in one compile."""
    from interop import caches
    _, gluon_builder = builder
    caches.clear()
    placed = []
    holders = movement._holders
    monkeypatch.setattr(movement, "_holders", lambda *args: placed.append(args) or holders(*args))
    a, b = PAIRS["warps"]
    first = movement.between(gluon_builder, a, b, [M, N], 16)
    assert movement.between(gluon_builder, a, b, [M, N], 16) == first and first.kind == "shared"
    assert len(placed) == 2, placed   # one per layout
