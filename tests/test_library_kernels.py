"""Kernels written as kernel libraries write them (tests/library_kernels.py): ports started for two
targets in one session, each checked against its own target's port; interpreter runs against
torch (libdevice, float arguments cast with ``.to()``, a scan whose combine function is a Gluon
port, an autotuned kernel's body); clear errors where something is not supported."""
import importlib
import inspect
import re
import sys

import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from hybrid import interpret  # noqa: E402
from hybrid.port import compare, start  # noqa: E402
from tests import library_kernels as lib  # noqa: E402

TARGETS = ("sm90a", "gfx942")


def line_of(fn, text: str) -> str:
    """``library_kernels.py:N``, the line of ``fn``'s source that contains ``text``."""
    lines, first = inspect.getsourcelines(fn.fn)
    return f"library_kernels.py:{first + next(i for i, line in enumerate(lines) if text in line)}"


@pytest.fixture
def ports_path(tmp_path):
    """A folder for ports, importable as the generated tests import them; their modules forgotten after."""
    before = set(sys.modules)
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", "") and sys.modules[name].__file__.startswith(str(tmp_path)):
            del sys.modules[name]


def softmax_inputs():
    x = torch.randn(3, 50)
    return (3, ), (x, torch.empty_like(x), 50), {"BLOCK": 64, "num_warps": 4}


def test_ports_for_two_targets_in_one_session_each_run_against_their_own(ports_path):
    """``exp`` is defined inside if/else (as flash-linear-attention does); its ports for sm90a and
    gfx942 go to one folder, and their tests, imported as pytest imports them, pass in turn."""
    tests = {}
    for target in TARGETS:
        files = start("tests/library_kernels.py:exp", target, None, ports_path, 4, translator=True)
        assert files.port.name == f"exp_gluon_{target}.py" and files.test.name == f"test_port_exp_{target}.py"
        assert f"TARGET = '{target}'" in files.port.read_text()
        tests[target] = importlib.import_module(files.test.stem)
        tests[target].inputs = softmax_inputs
    assert sorted(p.name for p in ports_path.glob("*.py")) == [
        "exp_gluon_gfx942.py", "exp_gluon_sm90a.py", "test_port_exp_gfx942.py", "test_port_exp_sm90a.py"]
    for target, test in tests.items():
        getattr(test, f"test_exp_gluon_{target}_matches_exp")()        # raises unless compare(...).ok
    # a test run against the other target's port fails, naming both targets
    tests["sm90a"].exp_gluon_sm90a = tests["gfx942"].exp_gluon_gfx942
    with pytest.raises(AssertionError, match="exp_gluon_sm90a comes from a port for gfx942, not sm90a"):
        tests["sm90a"].test_exp_gluon_sm90a_matches_exp()


@pytest.mark.parametrize("target", TARGETS)
def test_libdevice_rsqrt_and_float_arguments_match_torch(target):
    x, w = torch.randn(3, 40), torch.randn(40)
    y = torch.full_like(x, float("nan"))
    interpret.launch(lib.rms_norm_kernel, (3, ), y, x, w, 40, 40, 1e-6, 1.0, BLOCK=64, target=target)
    expected = x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6) * (1.0 + w)
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_libdevice_tanh_matches_torch(target):
    """Liger's GEGLU: ``__nv_tanhf`` / ``__ocml_tanh_f32`` computed by numpy (libdevice's own
    tanh is within 2 ulps, so the comparison allows a few)."""
    a, b, c = torch.randn(100), torch.randn(100), torch.full((100, ), float("nan"))
    interpret.launch(lib.geglu_kernel, (2, ), a, b, c, 100, BLOCK=64, target=target)
    torch.testing.assert_close(c, torch.nn.functional.gelu(a, approximate="tanh") * b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target, symbol", [("sm90a", "__nv_powf"), ("gfx942", "__ocml_pow_f32")])
def test_libdevice_without_numpy_raises_at_the_call(target, symbol):
    a, b, c = torch.rand(100), torch.randn(100), torch.empty(100)
    with pytest.raises(interpret.UnsupportedOpError) as info:
        interpret.launch(lib.pow_kernel, (2, ), a, b, c, 100, BLOCK=64, target=target)
    message = str(info.value)
    assert f"cannot run libdevice.pow ({symbol})" in message and line_of(lib.pow_kernel, "libdevice.pow(a") in message
    assert "rsqrt" in message and "tanh" in message     # what it does compute


def test_a_gluon_port_as_the_combine_function_of_a_triton_scan(ports_path):
    files = start("tests/library_kernels.py:first_order", "sm90a", None, ports_path, 4, translator=True)
    port = importlib.import_module(files.port.stem).first_order_gluon_sm90a
    a, b, h = torch.rand(64), torch.randn(64), torch.empty(64)
    result = compare(lib.recurrence_kernel, region=lib.first_order, candidate=port, grid=(1, ), args=(a, b, h),
                     kwargs={"BLOCK": 64}, interpret=True, target="sm90a")
    assert result.ok and [o.name for o in result.outputs] == ["h_ptr"], result.report()
    expected, state = torch.empty(64), 0.0
    for t in range(64):
        state = a[t] * state + b[t]
        expected[t] = state
    run = torch.empty(64)
    interpret.launch(lib.recurrence_kernel, (1, ), a, b, run, BLOCK=64, target="sm90a")
    torch.testing.assert_close(run, expected)


def test_a_helper_of_an_autotuned_kernel_ports_and_compares(ports_path):
    files = start("tests/library_kernels.py:silu", "gfx942", None, ports_path, 4, translator=True)
    assert files.kernel == "tests.library_kernels.silu_kernel"
    port = importlib.import_module(files.port.stem).silu_gluon_gfx942
    x = torch.randn(200)
    result = compare(lib.silu_kernel, region=lib.silu, candidate=port, grid=(4, ), args=(x, torch.empty(200), 200),
                     kwargs={"BLOCK": 64}, interpret=True, target="gfx942")
    assert result.ok, result.report()
    y = torch.empty(200)
    interpret.launch(lib.silu_kernel.fn, (2, ), x, y, 200, BLOCK=128, target="gfx942")
    torch.testing.assert_close(y, torch.nn.functional.silu(x))


def test_the_interpreter_accepts_the_casts_the_compiler_accepts():
    """``eps.to(tl.float32)`` on a float argument compiles, so it runs; ``tl.float32(n)`` does not
    compile, and the interpreter rejects it too, at its line."""
    sig = {"y_ptr": "*fp32", "x_ptr": "*fp32", "w_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "eps": "fp32",
           "offset": "fp32", "BLOCK": "constexpr"}
    triton.compile(ASTSource(lib.rms_norm_kernel, sig, constexprs={(7, ): 64}), target=GPUTarget("cuda", 90, 32))
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    with pytest.raises(triton.CompilationError, match="'dtype' object is not callable"):
        triton.compile(ASTSource(lib.dtype_call_kernel, sig, constexprs={(3, ): 16}), target=GPUTarget("cuda", 90, 32))
    with pytest.raises(interpret.InterpretError, match=re.escape(line_of(lib.dtype_call_kernel, "* tl.float32(n))"))
                       + ".*'dtype' object is not callable"):
        interpret.launch(lib.dtype_call_kernel, (1, ), torch.randn(16), torch.empty(16), 3, BLOCK=16, target="sm90a")
