"""A Triton host's stages are Triton's own (issue 21): registered through Triton's stage hook, so
``asm["ttir"]``, IR dumps, kernel overrides and Triton's stage timing see them; plain compiles
are untouched and a hook set before is chained. A Gluon host's ``asm["ttir"]`` holds its Triton
regions as Triton's ttir stage lowered them, from a fresh compile and from Triton's cache."""
import pytest
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from hybrid.compiler import specialization, stitched_ir
from interop.entry import stages_hook
from interop.entry.source import HybridGluonSource
from interop.targets import TARGETS
from interop.triton import compat
from interop.triton.frontend import ASTSource, GluonASTSource
from tests.kernels import t_outer, t_scale, vec_1d
from tests.triton_hosts import h_scale

pytestmark = pytest.mark.version

TARGET = "sm90a"
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
CONSTEXPRS = {"BLOCK": 256}


@triton.jit
def plain_scale(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 3.0 + 1.0)


def build() -> hybrid.FusedBinary:
    return hybrid.compile(h_scale, SIGNATURE, CONSTEXPRS, target=TARGET)


@pytest.fixture
def knobs(tmp_path):
    """Triton's knobs as they were after the test; every compile runs the pipeline."""
    with triton.knobs.compilation.scope(), triton.knobs.cache.scope(), triton.knobs.runtime.scope():
        triton.knobs.compilation.always_compile = True
        yield triton.knobs


def test_the_host_goes_through_tritons_ttir_and_ttgir_stages(knobs):
    fb = build()
    assert "tt.func public @h_scale" in fb.asm["ttir"] and "hybrid.gluon.in.0.0" in fb.asm["ttir"]
    assert "hybrid.gluon." not in fb.asm["ttgir"] and fb.kernel_entries == 1
    assert [r.function for r in fb.regions] == ["g_plus_one"]
    rows = {stage: seconds for stage, seconds, _ in fb.timing.rows()}
    assert {"host code generation", "triton ttir", "triton ttgir", "Gluon region builds", "stitching"} <= set(rows)
    assert sum(rows.values()) == pytest.approx(fb.timing.total) and all(s >= 0 for s in rows.values())


def test_dumped_ttir_overrides_the_host(knobs, tmp_path):
    """TRITON_KERNEL_DUMP writes the host's ttir; edited and put under TRITON_KERNEL_OVERRIDE's
    folder, it replaces the host's ttir, and the Gluon region is still spliced into it."""
    knobs.compilation.dump_ir, knobs.cache.dump_dir = True, str(tmp_path / "dump")
    fb = build()
    (dumped, ) = (tmp_path / "dump").rglob("*.ttir")
    assert "3.000000e+00" in dumped.read_text() and "3.000000e+00" in fb.asm["ttgir"]
    override = tmp_path / "override" / dumped.relative_to(tmp_path / "dump")
    override.parent.mkdir(parents=True)
    override.write_text(dumped.read_text().replace("3.000000e+00", "5.000000e+00"))
    knobs.compilation.dump_ir = False
    knobs.compilation.override, knobs.cache.override_dir = True, str(tmp_path / "override")
    overridden = build()
    assert "5.000000e+00" in overridden.asm["ttgir"] and "3.000000e+00" not in overridden.asm["ttgir"]
    assert "hybrid.gluon." not in overridden.asm["ttgir"] and overridden.kernel_entries == 1


def _plain_cubin() -> bytes:
    full, attrs = specialization(plain_scale, SIGNATURE, CONSTEXPRS)
    return triton.compile(ASTSource(plain_scale, full, CONSTEXPRS, attrs), target=TARGETS[TARGET]).asm["cubin"]


def test_plain_compiles_are_untouched_and_a_hook_set_before_is_chained(knobs):
    with_hook = _plain_cubin()
    knobs.runtime.add_stages_inspection_hook = None
    assert _plain_cubin() == with_hook
    seen = []

    def theirs(*args):
        if not args:
            return "theirs", "theirs"
        seen.append(args[3])

    knobs.runtime.add_stages_inspection_hook = theirs
    compat.install_stages_hook(stages_hook._extend)
    assert knobs.runtime.add_stages_inspection_hook() == ("theirs", "theirs")
    fb = build()
    assert seen and fb.kernel_entries == 1 and "hybrid.gluon." not in fb.asm["ttgir"]


def test_a_hook_that_drops_hybrids_is_an_error(knobs):
    knobs.runtime.add_stages_inspection_hook = lambda *args: None if args else ("", "")
    with pytest.raises(RuntimeError, match="add_stages_inspection_hook was replaced"):
        build()


@hybrid.jit
@gluon.jit
def g_host(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    x = gl.load(x_ptr + offs)
    y = t_outer(x, 3.0) + t_scale(x, 2.0)
    y = y * t_scale(x, 2.0)   # the same lowering as the line above's second call
    gl.store(y_ptr + offs, gl.convert_layout(y, L1))


@hybrid.jit
@gluon.jit
def g_host_alone(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs) * 3.0 + 1.0)


@gluon.jit
def plain_gluon(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=L1)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs) * 3.0 + 1.0)


GLUON_CONSTEXPRS = {"BLOCK": 512, "L1": vec_1d(TARGET)}


def build_gluon_host(kernel=g_host) -> hybrid.FusedBinary:
    return hybrid.compile(kernel, SIGNATURE, GLUON_CONSTEXPRS, target=TARGET)


@pytest.fixture(scope="module")
def gluon_host(tmp_path_factory):
    """``g_host`` built under a fresh Triton cache, then again from that cache, with the number
    of ``make_ir`` runs of the second build."""
    runs = []
    original = HybridGluonSource.make_ir

    def counted(self, *args):
        runs.append(self.fn.__name__)
        return original(self, *args)

    with triton.knobs.cache.scope(), triton.knobs.compilation.scope(), pytest.MonkeyPatch.context() as patch:
        triton.knobs.cache.dir = str(tmp_path_factory.mktemp("triton-cache"))
        triton.knobs.compilation.always_compile = False
        fresh = build_gluon_host()
        patch.setattr(HybridGluonSource, "make_ir", counted)
        cached = build_gluon_host()
    return fresh, cached, runs


def test_a_gluon_hosts_ttir_holds_its_triton_regions_as_tritons_ttir_stage_left_them(gluon_host):
    fb = gluon_host[0]
    ttir = fb.asm["ttir"]
    assert list(fb.asm)[:2] == ["source", "ttir"] and "glir" not in ttir
    sites = [f"r{r.index} {r.function} at {r.call_site}" for r in fb.regions]
    assert [r.function for r in fb.regions] == ["t_outer", "t_scale", "t_scale"]
    assert fb.regions[0].call_site.file == __file__
    # one module per distinct lowering, after the regions it serves
    assert [line for line in ttir.splitlines() if line.startswith("// ")] == [f"// {sites[0]}",
                                                                               f"// {sites[1]}; {sites[2]}"]
    assert ttir.count("\nmodule {") == 2 and ttir.count("tt.func private @hybrid_region(") == 2
    outer, scale = ttir.split(f"// {sites[1]}")
    assert "3.000000e+00" in outer and "arith.mulf" in scale and "3.000000e+00" not in scale
    assert "ttg." not in ttir and "#blocked" not in ttir   # tt IR: no layouts yet
    assert "hybrid_ttir" not in fb.metadata and not hasattr(fb.metadata, "hybrid_ttir")


def test_a_gluon_hosts_ttir_comes_back_from_tritons_cache(gluon_host):
    fresh, cached, runs = gluon_host
    assert runs == []   # served by Triton's cache: make_ir did not run
    assert cached.asm["ttir"] == fresh.asm["ttir"] and cached.binary == fresh.binary
    assert list(cached.asm) == list(fresh.asm) and dict(cached.metadata) == dict(fresh.metadata)


def test_gluon_compiles_without_triton_regions_have_no_ttir(gluon_host):
    """A plain Gluon compile gets no hybrid key, also right after a Gluon host's ``make_ir`` ran
    outside any compile (``stitched_ir``): what it handed over reaches no other compile."""
    stitched_ir(g_host, SIGNATURE, GLUON_CONSTEXPRS, target=TARGET)
    full, attrs = specialization(plain_gluon, SIGNATURE, GLUON_CONSTEXPRS)
    plain = triton.compile(GluonASTSource(plain_gluon, full, GLUON_CONSTEXPRS, attrs), target=TARGETS[TARGET])
    assert stages_hook.TTIR_KEY not in plain.metadata._fields and "ttir" not in plain.asm
    alone = build_gluon_host(g_host_alone)
    assert "ttir" not in alone.asm and not alone.regions
    assert stages_hook.TTIR_KEY not in alone.kernel.metadata._fields
