"""A Triton host's stages are Triton's own (issue 21): registered through Triton's stage hook, so
``asm["ttir"]``, IR dumps, kernel overrides and Triton's stage timing see them; plain compiles
are untouched and a hook set before is chained."""
import pytest
import triton
import triton.language as tl
from triton.experimental import gluon

import hybrid
from hybrid.compiler import specialization
from interop import stages_hook
from interop.targets import TARGETS
from interop.triton import compat
from interop.triton.frontend import ASTSource

TARGET = "sm90a"
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
CONSTEXPRS = {"BLOCK": 256}


@gluon.jit
def g_add_one(x):
    return x + 1.0


@hybrid.jit
@triton.jit
def h_scale(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, g_add_one(tl.load(x_ptr + offs) * 3.0))


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
    assert [r.function for r in fb.regions] == ["g_add_one"]
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
