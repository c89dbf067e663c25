"""Boundary conversion chains folded (``stitch.fold_boundary_conversions``) and its inner rewrites:
a splat constant made in the wanted layout (``fold_constant_conversions``), a shared-memory load
issued in it (``_fold_into_shared_loads``), a conversion only stored to shared memory dropped
(``fold_into_shared_stores``) and the host's loads of such a buffer moved up to the store
(``load_stored_values_early``). Shrunk from ``tests/kernels.py``'s ``k_chain`` and ``k_stage_region_result``."""
import pytest

from interop.stitching import stitch
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed

TARGETS = ["sm90a", "gfx942"]
SHARED = {"shared": "#ttg.swizzled_shared<{vec = 2, perPhase = 2, maxPhase = 16, order = [1, 0]}>",
          "smem": "#ttg.shared_memory"}


def vectors(target: str) -> dict[str, str]:
    lanes = LANES[target]
    return {"wide": blocked([2], [lanes], [4], [0]), "one": blocked([1], [lanes], [4], [0]),
            "four": blocked([4], [lanes], [4], [0])}


def tiles(target: str) -> dict[str, str]:
    """A 64x64 tile by rows (the host's load) and by columns (the reader's), and a buffer."""
    rows = [2, 16] if LANES[target] == 32 else [4, 16]
    return {"rows": blocked([1, 4], rows, [4, 1], [1, 0]),
            "cols": blocked([4, 1], [rows[1], rows[0]], [1, 4], [0, 1]), **SHARED}


def chain(target: str, wanted: str, boundary: str) -> str:
    """The host converts its row ``#wide -> #one``; the region's store wants it in ``wanted``."""
    return module_text(target, vectors(target), f'''  tt.func public @k_chain(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {{
    %0 = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #{wanted}>
    %1 = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #wide>
    %2 = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #wide>
    %3 = tt.addptr %2, %1 : tensor<512x!tt.ptr<f32>, #wide>, tensor<512xi32, #wide>
    %4 = tt.load %3 : tensor<512x!tt.ptr<f32>, #wide>
    %5 = ttg.convert_layout %4 : tensor<512xf32, #wide> -> tensor<512xf32, #one>
    %6 = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #{wanted}>
    %7 = tt.addptr %6, %0 : tensor<512x!tt.ptr<f32>, #{wanted}>, tensor<512xi32, #{wanted}>
    %8 = ttg.convert_layout %5 {boundary} : tensor<512xf32, #one> -> tensor<512xf32, #{wanted}>
    tt.store %7, %8 : tensor<512x!tt.ptr<f32>, #{wanted}>
    tt.return
  }}
''')


TAGGED = '{hybrid.boundary = "0:in:1"}'


@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_back_to_the_layout_converted_from_folds_to_nothing(target):
    module, context, _ = parsed(chain(target, "wide", TAGGED), target)
    stitch.fold_boundary_conversions(module, context)
    assert count(module, "ttg.convert_layout") == 0
    assert ops(module, "tt.store")[0].get_operand(1).id() == ops(module, "tt.load")[0].get_result(0).id()


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_into_a_third_layout_is_one_conversion_that_keeps_the_boundarys_tag(target):
    module, context, _ = parsed(chain(target, "four", TAGGED), target)
    stitch.fold_boundary_conversions(module, context)
    conversion, = ops(module, "ttg.convert_layout")
    assert conversion.get_operand(0).id() == ops(module, "tt.load")[0].get_result(0).id()
    assert conversion.get_str_attr("hybrid.boundary") == "0:in:1"
    assert str(conversion.get_result(0).get_type()) == str(ops(module, "tt.store")[0].get_operand(1).get_type())
    assert "tensor<512xf32, #four>" in printed(module, vectors(target)).split("ttg.convert_layout")[1].splitlines()[0]


def test_a_chain_no_boundary_tags_is_left_as_the_author_wrote_it():
    module, context, _ = parsed(chain("sm90a", "wide", ""), "sm90a")
    before = printed(module, vectors("sm90a"))
    assert stitch.fold_boundary_conversions(module, context) == stitch.Folded.nothing()
    assert printed(module, vectors("sm90a")) == before


def constant(target: str, literal: str, tag: str = TAGGED) -> str:
    """A loop's initial value, a splat constant in the host's layout, converted for the region."""
    return module_text(target, vectors(target), f'''  tt.func public @k(%y: !tt.ptr<f32>) {{
    %cst = arith.constant dense<{literal}> : tensor<512xf32, #wide>
    %0 = ttg.convert_layout %cst {tag} : tensor<512xf32, #wide> -> tensor<512xf32, #one>
    %1 = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #one>
    %2 = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #one>
    %3 = tt.addptr %2, %1 : tensor<512x!tt.ptr<f32>, #one>, tensor<512xi32, #one>
    tt.store %3, %0 : tensor<512x!tt.ptr<f32>, #one>
    tt.return
  }}
''')


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("literal", ["2.500000e+00", "0xFF800000"])   # (-inf, a running max: printed in hex)
def test_a_boundary_conversion_of_a_splat_constant_becomes_the_constant_in_the_wanted_layout(target, literal):
    module, context, builder = parsed(constant(target, literal), target)
    assert f"dense<{literal}> : tensor<512xf32, #wide>" in printed(module, vectors(target))   # printed as written
    assert stitch.fold_constant_conversions(module, builder) == {"0:in:1"}
    stitch.canonicalize(module, context)
    body = printed(module, vectors(target))
    assert "ttg.convert_layout" not in body
    assert f"arith.constant dense<{literal}> : tensor<512xf32, #one>" in body


def test_an_untagged_conversion_of_a_constant_stays():
    module, context, builder = parsed(constant("sm90a", "2.500000e+00", tag=""), "sm90a")
    assert stitch.fold_constant_conversions(module, builder) == set()
    stitch.canonicalize(module, context)
    assert count(module, "ttg.convert_layout") == 1


def staged(target: str, boundary: str = TAGGED) -> str:
    """The host's tile stored to shared memory, loaded back by rows and converted for the region
    by columns; the region reads it by columns."""
    return module_text(target, tiles(target), f'''  tt.func public @k(%t: tensor<64x64xf32, #rows>, %y: tensor<64x64x!tt.ptr<f32>, #cols>) {{
    %0 = ttg.local_alloc %t : (tensor<64x64xf32, #rows>) -> !ttg.memdesc<64x64xf32, #shared, #smem>
    %1 = ttg.local_load %0 : !ttg.memdesc<64x64xf32, #shared, #smem> -> tensor<64x64xf32, #rows>
    %2 = ttg.convert_layout %1 {boundary} : tensor<64x64xf32, #rows> -> tensor<64x64xf32, #cols>
    tt.store %y, %2 : tensor<64x64x!tt.ptr<f32>, #cols>
    tt.return
  }}
''')


@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_of_a_shared_memory_load_becomes_a_load_in_the_wanted_layout(target):
    module, context, builder = parsed(staged(target), target)
    assert stitch._fold_into_shared_loads(module, builder) == {"0:in:1"}
    stitch.canonicalize(module, context)
    body = printed(module, tiles(target))
    assert "ttg.convert_layout" not in body
    assert '= ttg.local_load %0 {hybrid.boundary = "0:in:1"} : !ttg.memdesc<64x64xf32, #shared, #smem> -> ' \
           'tensor<64x64xf32, #cols>' in body


def test_an_untagged_conversion_of_a_shared_memory_load_stays():
    module, _, builder = parsed(staged("sm90a", boundary=""), "sm90a")
    assert stitch._fold_into_shared_loads(module, builder) == set()
    assert count(module, "ttg.convert_layout") == 1


def stored(target: str, boundary: str = TAGGED) -> str:
    """A region's result converted to the host's layout only to be stored to shared memory (a
    ``tl.dot`` operand staged), the host's load of that buffer after other work."""
    return module_text(target, tiles(target), f'''  tt.func public @k(%t: tensor<64x64xf32, #cols>, %y: tensor<64x64x!tt.ptr<f32>, #rows>, %z: tensor<64x64x!tt.ptr<f32>, #rows>) {{
    %0 = ttg.convert_layout %t {boundary} : tensor<64x64xf32, #cols> -> tensor<64x64xf32, #rows>
    %1 = ttg.local_alloc %0 : (tensor<64x64xf32, #rows>) -> !ttg.memdesc<64x64xf32, #shared, #smem>
    %2 = tt.load %z : tensor<64x64x!tt.ptr<f32>, #rows>
    %3 = ttg.local_load %1 : !ttg.memdesc<64x64xf32, #shared, #smem> -> tensor<64x64xf32, #rows>
    %4 = arith.addf %2, %3 : tensor<64x64xf32, #rows>
    tt.store %y, %4 : tensor<64x64x!tt.ptr<f32>, #rows>
    tt.return
  }}
''')


def _after_alloc(body: str) -> str:
    lines = body.splitlines()
    return next(lines[k + 1] for k, line in enumerate(lines) if "ttg.local_alloc" in line)


@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_only_stored_to_shared_memory_is_dropped_and_the_load_moved_up(target):
    module, context, builder = parsed(stored(target), target)
    assert stitch.fold_into_shared_stores(module, builder) == {"0:in:1"}
    stitch.canonicalize(module, context)
    body = printed(module, tiles(target))
    assert "ttg.convert_layout" not in body
    assert "ttg.local_alloc %arg0 : (tensor<64x64xf32, #cols>)" in body
    assert "ttg.local_load" in _after_alloc(body) and count(module, "ttg.local_load") == 1


def test_an_untagged_conversion_stored_to_shared_memory_stays():
    module, _, builder = parsed(stored("sm90a", boundary=""), "sm90a")
    assert stitch.fold_into_shared_stores(module, builder) == set()
    assert count(module, "ttg.convert_layout") == 1 and "tt.load" in _after_alloc(printed(module, tiles("sm90a")))


@pytest.mark.parametrize("target", TARGETS)
def test_the_hosts_loads_of_a_buffer_storing_a_boundary_value_are_moved_up_to_the_store(target):
    module, context, builder = parsed(stored(target, boundary=""), target)
    value = ops(module, "ttg.convert_layout")[0].get_result(0)
    assert stitch.load_stored_values_early(module, builder, {value.id(): "0:out:0"}) == {"0:out:0"}
    stitch.canonicalize(module, context)
    assert "ttg.local_load" in _after_alloc(printed(module, tiles(target)))
    assert count(module, "ttg.local_load") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_fold_boundary_conversions_says_what_it_folded_each_boundary_into(target):
    module, context, _ = parsed(staged(target), target)
    folded = stitch.fold_boundary_conversions(module, context)
    assert folded.loaded == {"0:in:1"} and not (folded.stored or folded.constants or folded.recomputed)
    module, context, _ = parsed(constant(target, "2.500000e+00"), target)
    assert stitch.fold_boundary_conversions(module, context).constants == {"0:in:1"}
