"""Ports on a real GPU (skipped without one): every case of ``bench/port_parity.py`` for the GPU's
target (``bench.port_runs``), ported by ``hybrid port``, swapped into its kernel, computes what the
kernel without it computes on the same fresh inputs, and both are timed (``hybrid.port.compare``;
``bench/port_gpu.py`` times five of them at sizes that fill the card). The interpreter checks the
same ports on the CPU (``test_port_runs``, ``test_port_ttgir``, ``bench/port_runs.py``)."""
import pytest

torch = pytest.importorskip("torch")

from bench.port_runs import check, runs  # noqa: E402
from interop.targets import current_gpu_target  # noqa: E402

TARGET = current_gpu_target() if torch.cuda.is_available() else None
RUNS = {run.name: run for run in runs(TARGET)} if TARGET else {}


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(RUNS) or ["(no GPU target here)"])
def test_a_port_computes_on_the_gpu_what_its_kernel_computes(name, tmp_path):
    if not RUNS:
        pytest.skip("no GPU of the built targets here")
    result = check(RUNS[name], TARGET, "cuda", tmp_path)
    assert result.ok, result.report()
    assert set(result.times_ms) == {"original", "candidate"}, result.report()
    print(result.report())
