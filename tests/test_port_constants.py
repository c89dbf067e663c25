"""Low-precision constants in a port from Triton's IR: MLIR prints a bf16, fp16 or fp8 constant
it cannot spell in decimal as bits (``0xFF80``: bf16's -inf), and the port writes each as Gluon
makes that very value (tests/lowp_port_kernels.py)."""
import math

import pytest
import torch

from hybrid import cli
from hybrid.port import compare, from_ttgir
from hybrid.port.gluon_emit import encoded, low_precision
from interop.triton import compat
from tests import lowp_port_kernels as m

pytestmark = pytest.mark.version

N = 100   # below BLOCK: the masked lanes load the ``other`` constant
FP8 = pytest.mark.skipif(compat.TRITON_MAJOR_MINOR < (3, 7), reason="Triton 3.6's frontend cannot build an fp8 "
                         "tl.full (its builder has no get_fp8e4nv): the kernel itself does not build")


def _halves() -> torch.Tensor:
    torch.manual_seed(0)
    h = torch.randn(m.CONSTEXPRS["BLOCK"]).to(torch.float16)
    h[:4] = torch.tensor([0.0, float("nan"), float("inf"), -float("inf")])
    return h


def _inputs() -> tuple:
    x = (torch.randn(m.CONSTEXPRS["BLOCK"]) - 3).to(torch.bfloat16)   # all below 0: a -inf lane would win a max
    return x, _halves(), torch.full((1 + m.CONSTEXPRS["BLOCK"], ), float("nan")), N


@pytest.mark.parametrize("function, written", [
    ("masked_max_bf16", 'gl.full([128], float("-inf"), gl.bfloat16'),
    ("fp16_extremes", 'gl.full([128], float("-inf"), gl.float16'),
    pytest.param("fp8_round_trip", "gl.to_tensor(-127).to(gl.int8).to(gl.float8e5, bitcast=True)", marks=FP8),
    pytest.param("fp8_round_trip", "gl.full([128], 126, gl.int8, layout=BLOCKED).to(gl.float8e4nv, bitcast=True)",
                 marks=FP8),
])
def test_low_precision_constants_port_from_the_ir_at_parity_and_compute_the_same(function, written, tmp_path):
    fn = getattr(m, function)
    kernel, signature, args = (m.k_fp8, m.FP8_SIGNATURE, (_halves(), torch.full((m.CONSTEXPRS["BLOCK"], ), 0.0))) \
        if function.startswith("fp8") else (m.k_constants, m.SIGNATURE, _inputs())
    ported = from_ttgir.port(kernel, fn, signature, m.CONSTEXPRS, "sm90a", num_warps=4)
    assert written in ported.source
    assert ported.machine["port"] == ported.machine["original"], ported.machine
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    result = compare(kernel, region=fn, candidate=candidate, grid=(1, ), args=args,
                     kwargs={**m.CONSTEXPRS, "num_warps": 4}, interpret=True, target="sm90a", atol=0, rtol=0,
                     machine_code_report=False)
    assert result.ok, result.report()


def test_port_start_writes_the_bf16_helper_from_the_ir(tmp_path, capsys):
    assert cli.main(["port", "start", "tests/lowp_port_kernels.py:masked_max_bf16", "--target", "sm90a",
                     "--constexpr", "BLOCK=128", "-o", str(tmp_path)]) == 0
    assert "from the IR Triton's passes produced for its call" in capsys.readouterr().out
    assert 'float("-inf"), gl.bfloat16' in (tmp_path / "masked_max_bf16_gluon_sm90a.py").read_text()


@pytest.mark.parametrize("bits, element, value", [
    (0xFF80, "bf16", -math.inf), (0x7F7F, "bf16", 3.3895313892515355e+38), (0x0001, "bf16", 2.0 ** -133),
    (0x7BFF, "f16", 65504.0), (0x0001, "f16", 2.0 ** -24), (0x8000, "f16", -0.0),
    (0x7E, "f8E4M3FN", 448.0), (0x7F, "f8E4M3FN", math.nan), (0xFC, "f8E5M2", -math.inf),
    (0x01, "f8E4M3FN", 2.0 ** -9), (0x80, "f8E4M3FNUZ", math.nan), (0x80, "f8E5M2FNUZ", math.nan),
    (0x7F, "f8E4M3FNUZ", 240.0), (0x7B, "f8E5M2", 57344.0),
])
def test_low_precision_bits_read_as_their_values(bits, element, value):
    got = low_precision(bits, element)
    assert (math.isnan(got) and math.isnan(value)) or \
        (got == value and math.copysign(1, got) == math.copysign(1, value))
    if element.startswith("f8"):
        assert encoded(got, element) == bits or math.isnan(value)
