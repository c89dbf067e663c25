"""Regions do not nest (Gluon -> Triton -> Gluon): the compiler and the interpreter refuse it with
the same ``RegionError``, naming the inner Gluon call, the Triton region around it and both lines.
The single level (a Gluon region of a Triton kernel calling a Triton helper) builds and runs."""
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
from hybrid import interpret  # noqa: E402
from interop.errors import RegionError  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from tests import nested_kernels as nk  # noqa: E402

L = gl.BlockedLayout([1], [32], [4], [0])
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32"}


@pytest.mark.parametrize("kernel, region_line", [(nk.gluon_host_nested, "t_calls_gluon(gl.load"),
                                                 (nk.triton_host_nested, "convert_layout(t_calls_gluon(x)")])
def test_nested_regions_are_refused_alike_by_compiler_and_interpreter(kernel, region_line):
    with pytest.raises(RegionError) as compiled:
        hybrid.compile(kernel, SIG, {"BLOCK": 128, "L": L}, target="sm90a")
    with pytest.raises(RegionError) as interpreted:
        interpret.launch(kernel, (1, ), torch.ones(128), torch.zeros(128), BLOCK=128, L=L, target="sm90a")
    assert str(compiled.value) == str(interpreted.value)
    message = str(compiled.value)
    assert f"region 'g_double' called at {_site('g_double(x) + 1.0')}" in message
    assert f"Triton region 't_calls_gluon' called at {_site(region_line)}" in message
    assert "regions do not nest" in message


def _site(text: str) -> str:
    """``file:line`` of the line of ``tests/nested_kernels.py`` that holds ``text``."""
    lines = Path(nk.__file__).read_text().splitlines()
    return f"{nk.__file__}:{next(i for i, line in enumerate(lines, 1) if text in line)}"


def test_one_level_gluon_region_calling_a_triton_helper_builds_and_runs():
    fb = hybrid.compile(nk.triton_host_one_level, SIG, {"BLOCK": 128, "L": L}, target="sm90a")
    assert fb.kernel_entries == 1
    x, y = torch.randn(128), torch.zeros(128)
    interpret.launch(nk.triton_host_one_level, (1, ), x, y, BLOCK=128, L=L, target="sm90a")
    assert torch.equal(y, x + 1)
