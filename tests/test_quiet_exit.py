"""A script that compiles mixed kernels exits as quietly as one that compiles with Triton alone:
nothing on stderr after a successful compile, only the traceback after an error (no nanobind
leak report at interpreter shutdown). Scripts run as a user's would: their own file, a fresh
interpreter, empty caches (a cached binary compiles nothing, so it would prove nothing)."""
import os
import subprocess
import sys

import pytest

from tests.test_errors import ROOT

pytestmark = pytest.mark.version

PROLOGUE = """
import triton, triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
import hybrid
from examples import memcpy, softmax
"""
#: A Gluon host (a Triton region, whose result's Gluon layout is asked for) and a Triton host
#: (a Gluon region, built for the layouts Triton gave its operands).
BUILD_BOTH = PROLOGUE + "softmax.build('sm90a')\nmemcpy.build('sm90a')\n"
#: After a successful build, a region error raised to the top, per host kind.
ERRORS = {
    "gluon host": PROLOGUE + """
@triton.jit
def t_row_sum(x):
    return tl.sum(x, axis=1)

@hybrid.jit
@gluon.jit
def k_unconverted(x_ptr, y_ptr, L: gl.constexpr, L1: gl.constexpr):
    rows = gl.arange(0, 32, layout=gl.SliceLayout(1, L))
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, L))
    gl.store(y_ptr + gl.arange(0, 32, layout=L1), t_row_sum(gl.load(x_ptr + rows[:, None] * 64 + cols[None, :])))

softmax.build('sm90a')
hybrid.compile(k_unconverted, {'x_ptr': '*fp32', 'y_ptr': '*fp32'},
               {'L': gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), 'L1': gl.BlockedLayout([1], [32], [4], [0])})
""",
    "triton host": PROLOGUE + """
@gluon.jit
def g_shape_bug(x, L: gl.constexpr):
    return gl.convert_layout(x, L) + gl.arange(0, 16, layout=L)

@hybrid.jit
@triton.jit
def h_shape_bug(x_ptr, L: tl.constexpr):
    offs = tl.arange(0, 512)
    tl.store(x_ptr + offs, g_shape_bug(tl.load(x_ptr + offs), L))

memcpy.build('sm90a')
hybrid.compile(h_shape_bug, {'x_ptr': '*fp32'}, {'L': gl.BlockedLayout([4], [32], [4], [0])})
""",
}


def run_script(code: str, tmp_path) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_CACHE_DIR": str(tmp_path / "triton"),
           "HYBRID_CACHE_DIR": str(tmp_path / "hybrid")}
    return subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_successful_compile_of_either_host_exits_silently(tmp_path):
    proc = run_script(BUILD_BOTH, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == "", proc.stderr[-3000:]


@pytest.mark.parametrize("host", sorted(ERRORS))
def test_a_region_error_raised_to_the_top_ends_with_its_traceback(host, tmp_path):
    proc = run_script(ERRORS[host], tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.startswith("Traceback (most recent call last):"), proc.stderr[:3000]
    last = proc.stderr.rindex("RegionError: ")
    assert "nanobind" not in proc.stderr and "hint:" in proc.stderr[last:], proc.stderr[-3000:]
