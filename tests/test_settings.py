"""Build settings (issue 21): one record passed explicitly through a compile; enclosing blocks
are defaults, uniformly, an argument given wins, and the settings are part of the source's hash."""
import pytest

import hybrid
from hybrid.compiler import hybrid_source, stitched_ir
from interop.instrumentation import instrument
from interop import setting
from interop.setting import BuildSettings
from tests import kernels


def test_arguments_win_over_blocks_and_blocks_are_defaults():
    assert setting.resolve() == BuildSettings()
    with hybrid.boundary_mode("shared"), instrument.forced("iteration"):
        assert setting.resolve() == BuildSettings("shared", True, "iteration")
        assert setting.resolve(boundaries="auto", instrument_regions=False) == BuildSettings("auto", False, "iteration")
        with hybrid.boundary_mode("convert"):
            assert setting.current() == BuildSettings("convert", True, "iteration")
    assert setting.current() == BuildSettings()


def test_a_source_carries_its_settings_and_its_hash_sees_them():
    kernel, signature, constexprs = kernels.cases("sm90a")["reduce"]
    plain = hybrid_source(kernel, signature, constexprs, True)
    with hybrid.boundary_mode("convert"):
        launched = hybrid_source(kernel, signature, constexprs, True)   # as the JIT makes it: given none
    given = hybrid_source(kernel, signature, constexprs, True, settings=BuildSettings(boundaries="convert"))
    assert plain.settings == BuildSettings() and launched.settings == given.settings == BuildSettings("convert")
    assert launched.hash() == given.hash() != plain.hash()
    assert len({plain.hash(), hybrid_source(kernel, signature, constexprs, True,
                                            settings=BuildSettings(instrument_regions=True)).hash()}) == 2


def test_an_instrumented_block_is_a_default_an_argument_turns_off():
    kernel, signature, constexprs = kernels.cases("sm90a")["reduce"]
    with instrument.forced():
        assert "proton.record" in stitched_ir(kernel, signature, constexprs, "sm90a")
        assert "proton.record" not in stitched_ir(kernel, signature, constexprs, "sm90a", instrument_regions=False)


def test_settings_are_checked_where_they_are_given():
    with pytest.raises(ValueError, match="boundaries='fastest': expected one of auto, convert, shared"):
        BuildSettings(boundaries="fastest")
    with pytest.raises(ValueError, match="loops='sometimes'"):
        setting.resolve(loops="sometimes")
    with pytest.raises(TypeError, match="not a build setting: stages"):
        setting.resolve(stages=3)
