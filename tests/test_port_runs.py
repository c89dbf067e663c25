"""Ports compute what their kernels compute, in the interpreter: the tutorial-style ports of
``bench/port_parity.py`` that no other test runs, and two of the examples' (``test_port_ttgir``
runs the other tutorial-style ones; ``bench/port_runs.py`` runs every case for every target,
``test_port_gpu`` every case on a GPU). Each is ported for sm90a (the target with TMA), swapped
into its kernel, and both run on the same fresh inputs."""
import pytest

pytest.importorskip("torch")

from bench.port_runs import check, runs  # noqa: E402

pytestmark = pytest.mark.slow

TARGET = "sm90a"
#: ``Run.name`` of each case checked here: the upstream-style kernels' functions no other test
#: runs in the interpreter, and two of the examples' functions.
CHECKED = (
    "add@parity_ports.add_gluon_host", "add@parity_ports.add_triton", "mainloop@parity_ports.matmul_act_gluon_host",
    "row_moments_triton@parity_ports.layernorm_gluon_host", "load_row@parity_ports.layer_norm_fwd",
    "row_block@parity_ports.layer_norm_mean", "softmax_row_loop@parity_ports.softmax_rows_by_loop",
    "kv_loop@parity_ports.attention_gluon_host",
    "persistent_tiles_desc@parity_ports.matmul_descriptor_persistent_gluon_host",
    "persistent_tiles_desc@parity_ports.matmul_descriptor_persistent",
    "tile_pids@parity_ports.matmul_descriptor_persistent_gluon_tma",
    "k_loop_desc@parity_ports.matmul_descriptor_persistent_gluon_tma",
    "store_tile_desc@parity_ports.matmul_descriptor_persistent_gluon_tma",
    "k_loop_desc@parity_ports.matmul_descriptor_persistent_tma",
    "store_tile_desc@parity_ports.matmul_descriptor_persistent_tma",
    "tile_matmul@tile_matmul.matmul_kernel", "scaled_rows@mma_handoff.mma_kernel",
)
RUNS = {run.name: run for run in runs(TARGET)}


def test_every_case_of_the_port_bench_has_inputs_to_run_its_kernel():
    """``runs`` raises for a case whose kernel it cannot launch; the names checked here exist."""
    assert set(CHECKED) <= set(RUNS), set(CHECKED) - set(RUNS)
    assert len(RUNS) >= 35


@pytest.mark.parametrize("name", CHECKED)
def test_a_port_computes_what_its_kernel_computes_in_the_interpreter(name, tmp_path):
    result = check(RUNS[name], TARGET, "cpu", tmp_path)
    assert result.ok, result.report()
    assert result.outputs, result.report()   # the kernel wrote something to compare


@pytest.mark.parametrize("name, target", [
    ("store_tile_desc@parity_ports.matmul_descriptor_persistent_tma", "sm80"),
    ("k_loop_desc@parity_ports.matmul_descriptor_persistent_tma", "gfx942"),
    ("store_tile_subtiled@parity_ports.matmul_descriptor_persistent_subtiled", "sm80"),
    ("_attn_fwd_inner@parity_ports.attn_fwd", "gfx942")])
def test_a_port_taking_the_kernels_descriptors_as_pointers_computes_what_its_kernel_computes(name, target, tmp_path):
    """Without TMA the port takes the kernel's descriptors as ``hybrid.PointerDescriptor``: its
    loads and stores through them are the kernel's, in the interpreter."""
    run = next(run for run in runs(target) if run.name == name)
    result = check(run, target, "cpu", tmp_path)
    assert result.ok and result.outputs, result.report()
