"""Plain ``@triton.jit`` / ``@gluon.jit`` kernels (not ``@hybrid.jit``) launched with
``kernel[grid](...)`` inside ``hybrid.interpreting()``, and numpy kept quiet about masked-off lanes."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

import hybrid  # noqa: E402
from tests.conftest import has_gpu  # noqa: E402


@triton.jit
def masked_softmax(x_ptr, y_ptr, n, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * n + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def masked_ratio_log(x_ptr, d_ptr, y_ptr, n, BN: tl.constexpr):
    """Masked-off lanes divide 0 by 0 and take log(0): nan and -inf nobody stores."""
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    mask = cols < n
    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
    d = tl.load(d_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + cols, tl.log(x / d), mask=mask)


@gluon.jit
def gluon_scale(x_ptr, y_ptr, n, BN: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    cols = gl.program_id(0) * BN + gl.arange(0, BN, layout=layout)
    mask = cols < n
    gl.store(y_ptr + cols, gl.load(x_ptr + cols, mask=mask) * 2.0, mask=mask)


def _numpy_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_a_plain_triton_kernel_runs_in_the_interpreter_quietly():
    x = torch.randn(5, 37)
    y = torch.empty_like(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hybrid.interpreting(target="sm90a"):
            masked_softmax[(5,)](x, y, 37, BN=64)
    assert _numpy_warnings(caught) == []
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


def test_nan_and_inf_in_masked_off_lanes_raise_no_numpy_warning():
    n = 50
    x, d = torch.rand(n) + 0.5, torch.rand(n) + 0.5
    y = torch.empty(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hybrid.interpreting():
            masked_ratio_log[(2,)](x, d, y, n, BN=32)
    assert _numpy_warnings(caught) == []
    torch.testing.assert_close(y, torch.log(x / d))


def test_numpy_still_warns_outside_the_interpreter():
    with hybrid.interpreting():
        masked_ratio_log[(1,)](torch.ones(4), torch.ones(4), torch.empty(4), 4, BN=32)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1, dtype=np.float32))


def test_a_plain_gluon_kernel_runs_in_the_interpreter():
    x = torch.randn(300)
    y = torch.empty_like(x)
    with hybrid.interpreting(target="sm90a"):
        gluon_scale[(3,)](x, y, 300, BN=128, num_warps=4)
    torch.testing.assert_close(y, 2 * x)


@pytest.mark.skipif(has_gpu(), reason="outside the block a GPU would run it")
def test_outside_the_block_a_plain_kernel_is_upstreams_launch():
    with pytest.raises(RuntimeError, match="active drivers"):
        masked_softmax[(1,)](torch.randn(1, 8), torch.empty(1, 8), 8, BN=8)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def autotuned_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.heuristics({"BLOCK": lambda args: 32 if args["n"] < 100 else 128})
@triton.jit
def heuristic_scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 3 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_autotuned_and_heuristics_kernels_run_in_the_block_as_under_triton_interpret():
    """An autotuned kernel times no config on a GPU in the block: it runs the interpreter's config
    (the first, as ``hybrid.interpret.launch`` runs it); a heuristics kernel gets its values."""
    x = torch.randn(300)
    y, z = torch.zeros(300), torch.zeros(300)
    with hybrid.interpreting(target="sm90a"):
        autotuned_scale[lambda meta: (triton.cdiv(300, meta["BLOCK"]), )](x, y, 300)
        heuristic_scale[lambda meta: (triton.cdiv(300, meta["BLOCK"]), )](x, z, 300)
    torch.testing.assert_close(y, 2 * x)
    torch.testing.assert_close(z, 3 * x)
