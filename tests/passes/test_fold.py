"""The stitch's folds of boundary conversions (``stitching/stitch_passes.py``, each run as the
pipeline runs it): a chain of conversions folded into one (``fold chains``), a splat constant made
in the wanted layout (``fold constants``), index arithmetic made again in it (``rematerialize``), a
shared-memory load issued in it (``fold shared loads``), a conversion only stored to shared memory
dropped (``fold shared stores``), the canonicalizer after them where one folded (``canonicalize
folds``), and a Triton host's loads of a buffer storing a Gluon call's result moved up to the
store (``load stored results early``). Shrunk from ``tests/kernels.py``'s ``k_chain`` and
``k_stage_region_result``."""
import pytest

from interop import pipeline
from interop.stitching.stitch import Folded
from tests.passes.modules import LANES, blocked, count, module_text, ops, parsed, printed, run_pass, stitch_of

TARGETS = ["sm90a", "gfx942"]
_NAMES = [p.name for p in pipeline.TRITON_HOST]
#: The stitch's folds, in the pipeline's order: from ``fold chains`` to ``canonicalize folds``.
FOLDS = _NAMES[_NAMES.index("fold chains"):_NAMES.index("canonicalize folds") + 1]
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


@pytest.mark.ir_pass("fold chains", "canonicalize")
@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_back_to_the_layout_converted_from_folds_to_nothing(target):
    """``fold chains`` leaves the conversions it replaced dead: the canonicalizer after it deletes them."""
    module, context, _ = parsed(chain(target, "wide", TAGGED), target)
    run_pass(stitch_of(context, target), module, "fold chains", "canonicalize")
    assert count(module, "ttg.convert_layout") == 0
    assert ops(module, "tt.store")[0].get_operand(1).id() == ops(module, "tt.load")[0].get_result(0).id()


@pytest.mark.ir_pass("fold chains", "canonicalize")
@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_into_a_third_layout_is_one_conversion_that_keeps_the_boundarys_tag(target):
    module, context, _ = parsed(chain(target, "four", TAGGED), target)
    run_pass(stitch_of(context, target), module, "fold chains", "canonicalize")
    conversion, = ops(module, "ttg.convert_layout")
    assert conversion.get_operand(0).id() == ops(module, "tt.load")[0].get_result(0).id()
    assert conversion.get_str_attr("hybrid.boundary") == "0:in:1"
    assert str(conversion.get_result(0).get_type()) == str(ops(module, "tt.store")[0].get_operand(1).get_type())
    assert "tensor<512xf32, #four>" in printed(module, vectors(target)).split("ttg.convert_layout")[1].splitlines()[0]


@pytest.mark.ir_pass(*FOLDS)
def test_a_chain_no_boundary_tags_is_left_as_the_author_wrote_it():
    module, context, _ = parsed(chain("sm90a", "wide", ""), "sm90a")
    before = printed(module, vectors("sm90a"))
    assert run_pass(stitch_of(context, "sm90a"), module, *FOLDS).folded == Folded.nothing()
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


@pytest.mark.ir_pass("fold constants", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("literal", ["2.500000e+00", "0xFF800000"])   # (-inf, a running max: printed in hex)
def test_a_boundary_conversion_of_a_splat_constant_becomes_the_constant_in_the_wanted_layout(target, literal):
    module, context, _ = parsed(constant(target, literal), target)
    assert f"dense<{literal}> : tensor<512xf32, #wide>" in printed(module, vectors(target))   # printed as written
    state = run_pass(stitch_of(context, target), module, "fold constants", "canonicalize folds")
    assert state.folded.constants == {"0:in:1"}
    body = printed(module, vectors(target))
    assert "ttg.convert_layout" not in body
    assert f"arith.constant dense<{literal}> : tensor<512xf32, #one>" in body


@pytest.mark.ir_pass("fold constants", "canonicalize")
def test_an_untagged_conversion_of_a_constant_stays():
    module, context, _ = parsed(constant("sm90a", "2.500000e+00", tag=""), "sm90a")
    assert run_pass(stitch_of(context, "sm90a"), module, "fold constants", "canonicalize").folded == Folded.nothing()
    assert count(module, "ttg.convert_layout") == 1


@pytest.mark.ir_pass("canonicalize folds")
@pytest.mark.parametrize("folded", [True, False], ids=["after-a-fold", "after-none"])
def test_the_canonicalizer_after_the_folds_runs_only_where_one_folded(folded):
    """The conversion left dead (its store gone) is deleted where a fold replaced a conversion."""
    module, context, _ = parsed(constant("sm90a", "2.500000e+00", tag="").replace(
        "    tt.store %3, %0 : tensor<512x!tt.ptr<f32>, #one>\n", ""), "sm90a")
    state = stitch_of(context, "sm90a")
    if folded:
        state.folded = Folded(frozenset(), frozenset(), frozenset({"0:in:1"}), frozenset(), {})
    run_pass(state, module, "canonicalize folds")
    assert count(module, "ttg.convert_layout") == (0 if folded else 1)


def arithmetic(target: str) -> str:
    """The host's index row, made by ``#wide``, converted for the region's store by ``#one``."""
    return module_text(target, vectors(target), f'''  tt.func public @k(%y: !tt.ptr<i32>) {{
    %0 = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #wide>
    %1 = ttg.convert_layout %0 {TAGGED} : tensor<512xi32, #wide> -> tensor<512xi32, #one>
    %2 = tt.splat %y : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #one>
    %3 = tt.addptr %2, %1 : tensor<512x!tt.ptr<i32>, #one>, tensor<512xi32, #one>
    tt.store %3, %1 : tensor<512x!tt.ptr<i32>, #one>
    tt.return
  }}
''')


@pytest.mark.ir_pass("rematerialize", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_of_index_arithmetic_becomes_the_arithmetic_in_the_wanted_layout(target):
    module, context, _ = parsed(arithmetic(target), target)
    state = run_pass(stitch_of(context, target), module, "rematerialize", "canonicalize folds")
    assert state.folded.recomputed == {"0:in:1"}
    body = printed(module, vectors(target))
    assert "ttg.convert_layout" not in body and "#wide" not in body
    assert "tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #one>" in body


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


@pytest.mark.ir_pass("fold shared loads", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_of_a_shared_memory_load_becomes_a_load_in_the_wanted_layout(target):
    module, context, _ = parsed(staged(target), target)
    state = run_pass(stitch_of(context, target), module, "fold shared loads", "canonicalize folds")
    assert state.folded.loaded == {"0:in:1"}
    body = printed(module, tiles(target))
    assert "ttg.convert_layout" not in body
    assert '= ttg.local_load %0 {hybrid.boundary = "0:in:1"} : !ttg.memdesc<64x64xf32, #shared, #smem> -> ' \
           'tensor<64x64xf32, #cols>' in body


@pytest.mark.ir_pass("fold shared loads")
def test_an_untagged_conversion_of_a_shared_memory_load_stays():
    module, context, _ = parsed(staged("sm90a", boundary=""), "sm90a")
    assert run_pass(stitch_of(context, "sm90a"), module, "fold shared loads").folded == Folded.nothing()
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


@pytest.mark.ir_pass("fold shared stores", "canonicalize folds")
@pytest.mark.parametrize("target", TARGETS)
def test_a_boundary_conversion_only_stored_to_shared_memory_is_dropped_and_the_load_moved_up(target):
    module, context, _ = parsed(stored(target), target)
    state = run_pass(stitch_of(context, target), module, "fold shared stores", "canonicalize folds")
    assert state.folded.stored == {"0:in:1"}
    body = printed(module, tiles(target))
    assert "ttg.convert_layout" not in body
    assert "ttg.local_alloc %arg0 : (tensor<64x64xf32, #cols>)" in body
    assert "ttg.local_load" in _after_alloc(body) and count(module, "ttg.local_load") == 1


@pytest.mark.ir_pass("fold shared stores")
def test_an_untagged_conversion_stored_to_shared_memory_stays():
    module, context, _ = parsed(stored("sm90a", boundary=""), "sm90a")
    assert run_pass(stitch_of(context, "sm90a"), module, "fold shared stores").folded == Folded.nothing()
    assert count(module, "ttg.convert_layout") == 1 and "tt.load" in _after_alloc(printed(module, tiles("sm90a")))


#: The Gluon function a Triton host calls for the tile it stores (declared: its body is no matter here).
GLUON_CALL = "tt.func private @__hybrid_r0_g(tensor<64x64xf32, #cols>) -> tensor<64x64xf32, #rows>"


@pytest.mark.ir_pass("load stored results early")
@pytest.mark.parametrize("target", TARGETS)
def test_the_hosts_loads_of_a_buffer_storing_a_boundary_value_are_moved_up_to_the_store(target):
    """Run inside the host's relayout (``hide region bodies`` .. ``restore region bodies``), which
    records the relayout the pass adds to."""
    text = stored(target, boundary="").replace(
        "%0 = ttg.convert_layout %t  : tensor<64x64xf32, #cols> -> tensor<64x64xf32, #rows>",
        "%0 = tt.call @__hybrid_r0_g(%t) : (tensor<64x64xf32, #cols>) -> tensor<64x64xf32, #rows>")
    module, context, _ = parsed(text.replace("  }\n}\n", f"  }}\n  {GLUON_CALL}\n}}\n"), target)
    state = stitch_of(context, target)
    state.compile.gluon.symbols["__hybrid_r0_g"] = 0
    run_pass(state, module, "hide region bodies", "load stored results early", "restore region bodies", "canonicalize")
    assert state.relaid.stored == {"0:out:0"}
    assert "ttg.local_load" in _after_alloc(printed(module, tiles(target)))
    assert count(module, "ttg.local_load") == 1


@pytest.mark.ir_pass(*FOLDS)
@pytest.mark.parametrize("target", TARGETS)
def test_the_folds_say_what_they_folded_each_boundary_into(target):
    module, context, _ = parsed(staged(target), target)
    folded = run_pass(stitch_of(context, target), module, *FOLDS).folded
    assert folded.loaded == {"0:in:1"} and not (folded.stored or folded.constants or folded.recomputed)
    module, context, _ = parsed(constant(target, "2.500000e+00"), target)
    assert run_pass(stitch_of(context, target), module, *FOLDS).folded.constants == {"0:in:1"}
