"""Ports on a real GPU (skipped without one): each upstream-style helper ported by ``hybrid port``
for the GPU's target, swapped into its kernel, computes what the kernel without it computes,
and both are timed (``hybrid.port.compare``; ``bench/port_gpu.py`` times them at larger sizes).
The interpreter checks the same ports on the CPU (``test_port_ttgir``)."""
import pytest

torch = pytest.importorskip("torch")

from bench.port_gpu import CASES, ported  # noqa: E402
from examples.run import current_gpu_target  # noqa: E402
from hybrid.port import compare  # noqa: E402


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_a_port_computes_on_the_gpu_what_its_kernel_computes(name, tmp_path):
    target = current_gpu_target()
    if target is None:
        pytest.skip("GPU architecture not among the built targets")
    case = CASES[name]
    candidate = ported(name, target, tmp_path)
    grid, args, tolerance = case.inputs("cuda")
    result = compare(case.kernel, region=case.fn, candidate=candidate, grid=grid, args=args,
                     kwargs={**case.constexprs, "num_warps": case.options["num_warps"]}, interpret=False,
                     target=target, atol=tolerance, rtol=tolerance)
    assert result.ok, result.report()
    assert set(result.times_ms) == {"original", "candidate"}, result.report()
    print(result.report())
