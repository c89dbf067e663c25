"""``@triton.autotune`` on ``@hybrid.jit``: the JIT compiles each config through the hybrid
pipeline (upstream's behaviour); ``hybrid build`` puts every config of every target into the
bundle, the manifest lists them and the loader picks one by key. On the CPU, up to the launch."""
import hashlib
import io

import pytest
from rich.console import Console

import hybrid
from hybrid.loader import ArgumentError, BundleError, DriverNotFound, load_bundle
from scheduler import InlineExecutor, build, plan
from scheduler.bundle import read_bundle, write_bundles
from scheduler.planning import resolve
from tests import autotune_kernels as ak
from tests.test_jit import Pointer, jit_target  # noqa: F401  (jit_target: a fixture)

REF = "tests.autotune_kernels:scale_kernel"
TARGETS = ["sm90a", "gfx942"]
NO_DRIVER = "libhybrid-no-such-driver.so"


def expected_key(config) -> str:
    return (f"BLOCK={config.kwargs['BLOCK']},num_warps={config.num_warps},num_ctas={config.num_ctas},"
            f"num_stages={config.num_stages}")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    results = build(plan([REF], TARGETS), hybrid.compile, executor=InlineExecutor())
    assert all(r.ok for r in results), [r.error for r in results]
    return results, write_bundles(results, tmp_path_factory.mktemp("bundles"))["scale_kernel"]


def test_plan_makes_a_job_per_config_and_target_with_the_configs_values():
    jobs = plan([REF], TARGETS)
    assert [(j.target, j.config) for j in jobs] == [(t, i) for t in TARGETS for i in range(len(ak.CONFIGS))]
    assert len({j.label for j in jobs}) == len(jobs)
    for job in jobs:
        spec, config = resolve(job), ak.CONFIGS[job.config]
        assert spec.fn is ak.scale_kernel.fn   # the @hybrid.jit kernel under the autotuner
        assert spec.constexprs == config.kwargs
        assert (spec.options["num_warps"], spec.options["num_stages"]) == (config.num_warps, config.num_stages)
        assert spec.config_json["key"] == expected_key(config)


@pytest.mark.parametrize("jit_target", TARGETS, indirect=True)
def test_the_jit_compiles_each_config_through_the_hybrid_pipeline_into_the_bundles_binary(jit_target, bundle):
    if jit_target.startswith("gfx"):
        pytest.importorskip("torch", reason="Triton's AMD argument specialization imports torch")
    compiled = ak.scale_kernel.warmup(Pointer("fp32"), Pointer("fp32"), 1000, 2.0, grid=(1, ))
    entries = read_bundle(bundle[1]).manifest["targets"][jit_target]["configs"]
    assert len(compiled) == len(ak.CONFIGS)
    for config, kernel in zip(ak.CONFIGS, compiled):
        ttgir = kernel.asm["ttgir"]
        # the Gluon region spliced in and inlined (upstream's Triton cannot call a Gluon function at all)
        assert "g_scale" in ttgir and "tt.call" not in ttgir and ttgir.count("tt.func public") == 1
        assert f"tensor<{config.kwargs['BLOCK']}x" in ttgir
        assert (kernel.metadata.num_warps, kernel.metadata.num_stages) == (config.num_warps, config.num_stages)
        binary = kernel.asm["cubin" if "cubin" in kernel.asm else "hsaco"]
        assert hashlib.sha256(binary).hexdigest() == entries[expected_key(config)]["sha256"]


def test_the_manifest_lists_every_config_and_holds_each_binary(bundle):
    data = read_bundle(bundle[1]).manifest
    path = bundle[1]
    assert [c["key"] for c in data["configs"]] == [expected_key(c) for c in ak.CONFIGS]
    assert [c["values"]["BLOCK"] for c in data["configs"]] == [c.kwargs["BLOCK"] for c in ak.CONFIGS]
    files = set()
    for target in TARGETS:
        entries = data["targets"][target]["configs"]
        for config in ak.CONFIGS:
            entry = entries[expected_key(config)]
            assert entry["isa"] == data["targets"][target]["isa"]   # where the loader looks for the target's
            assert entry["num_warps"] == config.num_warps and entry["constexprs"] == config.kwargs
            assert hashlib.sha256((path / entry["file"]).read_bytes()).hexdigest() == entry["sha256"]
            files.add(entry["file"])
    assert len(files) == len(TARGETS) * len(ak.CONFIGS)


def test_hybrid_build_names_each_config():
    from hybrid.cli import results_table
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(results_table(build(plan([REF], ["sm90a"]), hybrid.compile, executor=InlineExecutor())))
    text = console.export_text()
    assert "scale_kernel #0" in text and "scale_kernel #1" in text and "autotune config" in text


def test_the_loader_chooses_a_config_by_key(bundle):
    path = bundle[1]
    first, second = (expected_key(c) for c in ak.CONFIGS)
    assert load_bundle(path, arch="sm_90").config == first     # the module's first by default
    kernel = load_bundle(path, arch="sm_90", config=second)
    assert kernel.configs == [first, second] and kernel.entry["num_warps"] == ak.CONFIGS[1].num_warps
    assert hashlib.sha256(kernel.binary).hexdigest() == kernel.entry["sha256"]
    assert load_bundle(path, arch="gfx942", config={"BLOCK": ak.CONFIGS[1].kwargs["BLOCK"]}).config == second
    with pytest.raises(BundleError, match=r"2 autotune config\(s\) matching \{'num_ctas': 1\}; it has: BLOCK=256"):
        load_bundle(path, arch="sm_90", config={"num_ctas": 1})
    with pytest.raises(BundleError, match="no autotune config"):
        load_bundle(path, arch="sm_90", config="BLOCK=3")


def test_a_bundle_without_configs_refuses_one(softmax_bundle):
    with pytest.raises(BundleError, match="built without autotune configs"):
        load_bundle(softmax_bundle[1], arch="sm_90", config="BLOCK=256")


def test_a_configs_launch_checks_its_arguments_then_needs_the_driver(bundle):
    kernel = load_bundle(bundle[1], arch="sm_90", config={"BLOCK": 1024}, driver_library=NO_DRIVER)
    with pytest.raises(ArgumentError, match="scale: expected a number for fp32"):
        kernel[(1, )](0, 0, 1000, "2")
    with pytest.raises(DriverNotFound, match=NO_DRIVER):
        kernel[(1, )](0, 0, 1000, 2.0)   # valid arguments: the driver is the first thing missing
