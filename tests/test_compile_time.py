"""What keeps compiles fast stays correct: the per-stage timer adds up, a cached region lowering
gives the binary a fresh one gives, and its key sees what the lowering depends on."""
import json

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from interop import caches
from interop.lowering import lowering_cache
from interop.instrumentation import timing
from interop.targets import TARGETS
from interop.triton.frontend import make_backend
from interop.triton.language import core as tl
from tests.kernels import t_scale, vec_1d


@hybrid.jit
@gluon.jit
def k_twice(x_ptr, y_ptr, BLOCK: gl.constexpr, L1: gl.constexpr):
    """The same helper, for the same types, at two call sites: lowered once."""
    offs = gl.arange(0, BLOCK, layout=L1)
    x = gl.load(x_ptr + offs)
    a = gl.convert_layout(t_scale(x, 2.0), L1)
    b = gl.convert_layout(t_scale(x, 2.0), L1)
    gl.store(y_ptr + offs, a + b)


def _build(target: str = "sm90a", **options):
    return hybrid.compile(k_twice, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"BLOCK": 512, "L1": vec_1d(target)},
                          target=target, **options)


def test_a_helper_is_lowered_once_per_specialization_and_the_cached_lowering_builds_the_same_binary(cold_caches):
    cold = _build()
    assert len(cold.regions) == 2 and cold.kernel_entries == 1
    assert cold.timing.hits.get("Triton region lowering") == 1   # the second call site parsed the first's
    warm = _build()                                              # both from memory now
    assert warm.timing.hits.get("Triton region lowering") == 2
    caches.clear()
    disk = _build()                                              # a new process would read the disk entry
    assert disk.timing.hits.get("Triton region lowering") == 2
    assert list(cold_caches.glob("regions/*/*.json"))
    for fb in (warm, disk):
        assert fb.binary == cold.binary and fb.asm["ptx"] == cold.asm["ptx"] and fb.asm["ttir"] == cold.asm["ttir"]
        assert [b.to_json() for b in fb.boundaries] == [b.to_json() for b in cold.boundaries]


def test_a_disk_entry_without_the_regions_ttir_is_a_miss(cold_caches):
    cold = _build()
    for path in cold_caches.glob("regions/*/*.json"):   # as written before entries kept the ttir
        entry = json.loads(path.read_text())
        del entry["ttir"]
        path.write_text(json.dumps(entry))
    caches.clear()
    old = _build()
    assert old.timing.hits.get("Triton region lowering") == 1   # lowered again; its second call site hit
    assert old.asm["ttir"] == cold.asm["ttir"] and "tt.func private @hybrid_region(" in old.asm["ttir"]


def test_other_options_miss_the_cache(cold_caches):
    _build()
    other = _build(num_stages=1)
    assert other.timing.hits.get("Triton region lowering") == 1   # only its own second call site
    assert other.metadata["num_stages"] == 1


def test_the_lowering_key_sees_host_layouts_constexprs_options_and_target():
    options = make_backend(TARGETS["sm90a"]).parse_options({})
    ty = tl.block_type(tl.float32, [512])
    base = dict(fn=t_scale, args=[tl.constexpr(2.0)], arg_types=[ty], host_types=["tensor<512xf32, #a>"],
                scalar_attrs=[], options=options, target=TARGETS["sm90a"])
    key = lowering_cache.key(**base)
    assert key == lowering_cache.key(**base)
    changes = [dict(host_types=["tensor<512xf32, #b>"]), dict(args=[tl.constexpr(3.0)]),
               dict(arg_types=[tl.block_type(tl.float16, [512])]), dict(scalar_attrs=[[("tt.divisibility", 16)]]),
               dict(options=make_backend(TARGETS["sm90a"]).parse_options({"num_warps": 8})),
               dict(target=TARGETS["sm100a"])]
    assert len({key, *(lowering_cache.key(**{**base, **change}) for change in changes)}) == len(changes) + 1


def test_the_lowering_key_sees_the_environment_variables_tritons_own_key_sees(monkeypatch):
    """A region lowered under ``TRITON_HIP_USE_BLOCK_PINGPONG=0`` (AMD's ping-pong pass off) is not
    served to a compile without it, as Triton's own cache serves no such binary."""
    options = make_backend(TARGETS["gfx942"]).parse_options({})
    base = dict(fn=t_scale, args=[tl.constexpr(2.0)], arg_types=[tl.block_type(tl.float32, [512])],
                host_types=["tensor<512xf32, #a>"], scalar_attrs=[], options=options, target=TARGETS["gfx942"])
    plain = lowering_cache.key(**base)
    monkeypatch.setenv("TRITON_HIP_USE_BLOCK_PINGPONG", "0")
    assert lowering_cache.key(**base) != plain


def test_the_stages_of_a_compile_add_up_to_its_total(cold_caches):
    fb = _build("gfx942")
    rows = {stage: seconds for stage, seconds, _ in fb.timing.rows()}
    assert {"host code generation", "Triton region lowering", "stitching", "triton llir", "triton hsaco"} <= set(rows)
    assert sum(rows.values()) == pytest.approx(fb.timing.total)
    assert all(seconds >= 0 for seconds in rows.values())
    with timing.recording() as outer:
        with timing.stage("a"):
            with timing.stage("b"):
                pass
    assert outer.calls == {"a": 1, "b": 1} and outer.seconds["a"] + outer.seconds["b"] <= outer.total
