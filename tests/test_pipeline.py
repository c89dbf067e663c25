"""The compile's passes as data (``interop.pipeline``) and their one runner
(``interop.stitching.runner``): verified, named in a failure, dumped on request, observed."""
import threading

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop import pipeline
from interop.errors import RegionError
from interop.lowering.assemble import recording_spliced
from interop.lowering.triton_regions import recording_lowerings
from interop.ir.walk import function_blocks
from interop.stitching import opaque, runner, stitch_passes
from interop.triton.bindings import gluon_ir
from tests.kernels import t_scale, vec_1d
from tests.triton_hosts import h_scale

TARGET = "sm90a"
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32"}


@hybrid.jit
@gluon.jit
def gluon_host(x_ptr, y_ptr, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L)
    gl.store(y_ptr + offs, t_scale(gl.load(x_ptr + offs), 2.0))


def build_triton_host() -> hybrid.FusedBinary:
    return hybrid.compile(h_scale, SIGNATURE, {"BLOCK": 256}, target=TARGET)


def build_gluon_host() -> hybrid.FusedBinary:
    return hybrid.compile(gluon_host, SIGNATURE, {"BLOCK": 512, "L": vec_1d(TARGET)}, target=TARGET)


def test_the_pass_lists_read_in_order():
    assert [p.name for p in pipeline.TRITON_HOST] == [
        "splice Gluon calls", "hide region bodies", "fold opaque branches", "sink result casts",
        "issue loads in call layouts", "lay out the host", "transpose in thread", "tag boundaries",
        "load stored results early", "restore region bodies", "relocate scopes", "keep called regions",
        "splice Triton calls", "inline", "connect results", "fold chains", "canonicalize", "fold constants",
        "rematerialize", "join conversions", "sink casts", "fold shared loads", "fold shared stores", "merge stagings",
        "canonicalize folds", "hoist invariants", "buffer access", "untag entry conversions", "speculate", "interleave tmem", "plan boundaries",
        "complete boundaries", "place scopes"]
    assert [p.name for p in pipeline.GLUON_HOST] == [
        "make entry conversions in place", "buffer access", "keep called regions", "splice Triton calls", "inline",
        "connect results", "fold chains", "canonicalize", "fold constants", "rematerialize", "join conversions", "sink casts",
        "fold shared loads", "fold shared stores", "canonicalize folds", "plan boundaries", "complete boundaries",
        "place scopes"]


def _breaking(state, module) -> None:
    """An empty block (no terminator) appended to the kernel: the module no longer verifies."""
    kernel = module.get_function(module.get_entry_func_name())
    gluon_ir.GluonOpBuilder(state.context).create_block_with_parent(kernel.get_region(0), [])


@pytest.mark.parametrize("host, build, region", [("TRITON_HOST", build_triton_host, "g_plus_one"),
                                                 ("GLUON_HOST", build_gluon_host, "t_scale")])
def test_a_pass_that_breaks_the_module_is_named(host, build, region, cold_caches, monkeypatch):
    passes = list(getattr(pipeline, host))
    at = [p.name for p in passes].index("fold chains")
    monkeypatch.setattr(pipeline, host, passes[:at] + [runner.Pass("break the module", _breaking)] + passes[at:])
    with pytest.raises(RegionError) as caught:
        build()
    assert caught.value.function == region
    assert "the pass 'break the module' failed" in caught.value.reason
    assert "does not verify after the pass 'break the module'" in caught.value.reason


def _breaking_quietly(state, module) -> bool:
    """``_breaking``, saying it changed nothing."""
    _breaking(state, module)
    return False


def test_a_pass_that_says_it_changed_nothing_is_not_verified_after(cold_caches, monkeypatch):
    passes = list(pipeline.TRITON_HOST)
    at = [p.name for p in passes].index("inline")   # (which does not say: verified after)
    monkeypatch.setattr(pipeline, "TRITON_HOST", passes[:at] + [runner.Pass("do nothing", lambda s, m: False)]
                        + passes[at:])
    verified = []
    monkeypatch.setattr(runner, "verify", lambda module, step: verified.append(step))
    build_triton_host()
    assert not [step for step in verified if "'do nothing'" in step and "'inline'" not in step]
    (after_inline, ) = [step for step in verified if step.startswith("the pass 'inline' (or ")]
    assert "'do nothing'" in after_inline and after_inline.endswith(" before it, which reported no change)")


@pytest.mark.parametrize("host, build, region", [("TRITON_HOST", build_triton_host, "g_plus_one"),
                                                 ("GLUON_HOST", build_gluon_host, "t_scale")])
def test_a_pass_that_breaks_the_module_saying_it_changed_nothing_is_caught_at_the_end(
        host, build, region, cold_caches, monkeypatch):
    monkeypatch.setattr(pipeline, host, getattr(pipeline, host) + [runner.Pass("break quietly", _breaking_quietly)])
    with pytest.raises(RegionError) as caught:
        build()
    assert caught.value.function == region
    assert caught.value.reason.startswith("the last verify failed: the stitched module does not verify after ")
    assert "'break quietly', which reported no change:" in caught.value.reason


def _marking(state, module) -> None:
    """A boundary marker left at the top of the kernel, as a pass that forgot one would."""
    builder = gluon_ir.GluonOpBuilder(state.context)
    kernel = module.get_function(module.get_entry_func_name())
    builder.set_insertion_point_to_start(function_blocks(module, kernel)[0])
    opaque.enable_flag(builder, "hybrid.left.behind")


def test_a_marker_left_where_none_may_be_is_named_with_the_pass(cold_caches, monkeypatch):
    passes = list(pipeline.TRITON_HOST)
    at = [p.name for p in passes].index("plan boundaries")
    monkeypatch.setattr(pipeline, "TRITON_HOST", passes[:at] + [runner.Pass("leave a marker", _marking,
                                                                            markers_gone=True)] + passes[at:])
    with pytest.raises(RegionError, match=r"the pass 'leave a marker' failed: .*survived stitching: "
                                          r"\['hybrid.left.behind'\]"):
        build_triton_host()


def test_the_module_is_dumped_after_the_named_pass(cold_caches, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_DUMP_AFTER", "fold chains")
    monkeypatch.setenv("HYBRID_DUMP_DIR", str(tmp_path / "dumps"))
    seen = []
    with runner.observing(runner.Observer(stitch_passes.fold_chains, lambda state, module: seen.append(str(module)))):
        build_triton_host()
    position = [p.name for p in pipeline.TRITON_HOST].index("fold chains")
    (dumped, ) = (tmp_path / "dumps").iterdir()
    assert dumped.name == f"h_scale.{position:02d}.fold_chains.mlir"
    assert dumped.read_text() == f"// -----// IR Dump After fold chains //----- //\n{seen[0]}\n"


def test_the_dump_goes_to_stderr_without_a_folder(cold_caches, capfd, monkeypatch):
    monkeypatch.setenv("HYBRID_DUMP_AFTER", "inline, canonicalize")
    monkeypatch.delenv("HYBRID_DUMP_DIR", raising=False)
    build_gluon_host()
    err = capfd.readouterr().err
    assert [line for line in err.splitlines() if "IR Dump After" in line] == [
        "// -----// IR Dump After inline //----- //", "// -----// IR Dump After canonicalize //----- //"]
    assert "tt.func public @gluon_host" in err


def test_the_port_tools_observers_see_their_compiles_only(cold_caches):
    theirs = []

    def recording_elsewhere():
        with recording_lowerings() as recorded:
            build_gluon_host()
        theirs.extend(recorded)

    with recording_lowerings() as lowered, recording_spliced() as spliced:
        build_gluon_host()
        built = build_triton_host()
        elsewhere = threading.Thread(target=recording_elsewhere)   # another thread's compile is its own
        elsewhere.start()
        elsewhere.join()
    build_gluon_host()   # and one after the block no one's
    (call, ) = lowered
    assert [c.fn for c in theirs] == [t_scale]
    assert call.fn is t_scale and call.leaf_names == ["x"] and call.specialized == {"factor": 2.0}
    assert "tt.func" in call.text and "tt.return" in call.text   # the region as lowered, before its splice
    (host, ) = spliced   # the Triton host as stitched, its Gluon region still called
    assert f"tt.call @{built.regions[0].symbol}" in host and "tt.func public @h_scale" in host
    rows = {stage for stage, _, _ in built.timing.rows()}
    assert {"stitching", "host relayout", "boundary planning"} <= rows   # each pass charged to its stage
