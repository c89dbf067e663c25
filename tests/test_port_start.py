"""``hybrid port start``: the port (parses, same parameters, layouts valid for the target: it
compiles swapped into its kernel), the compare test (inputs from problem()/run(), or a stub),
errors, and the command line."""
import ast
import importlib.util
import inspect
import types
from pathlib import Path

import pytest
import triton
from triton.experimental import gluon

import hybrid
import hybrid.port
from examples import softmax
from hybrid import cli
from hybrid.port import PortError, capture_launch, start
from hybrid.port.launch import run_variant
from interop.triton.frontend import GluonJITFunction
from tests import port_kernels

pytestmark = pytest.mark.version

ROOT = Path(__file__).resolve().parents[1]

#: The port of examples.softmax.row_stats, the same from Triton 3.6's translator as from 3.9's.
ROW_STATS_BODY = """\
gl.static_assert(gl.num_warps() == NUM_WARPS, "row_stats_gluon_{target}: launch the kernel with num_warps=NUM_WARPS (the port's layouts are made for that many warps), or change NUM_WARPS")
x = reset_to_default_layout(x)
n_cols = reset_to_default_layout(n_cols)
cols = tl_arange(0, BN)
x = gl.where(convert_to_expand_dims_layout(cols, [0])[None, :] < n_cols, x, float('-inf'))
m = reset_to_default_layout(gl.max(x, axis=1))
s = reset_to_default_layout(gl.sum(gl.exp(x - convert_to_expand_dims_layout(m, [1])[:, None]), axis=1))
return (m, s)"""


def load(path: Path) -> types.ModuleType:
    """A generated file as a fresh module (ports of two targets share a file name)."""
    spec = importlib.util.spec_from_file_location(f"{path.stem}_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def swapped(kernel, name: str, replacement):
    """A hybrid copy of ``kernel`` whose globals bind ``name`` to ``replacement``."""
    fn = kernel.fn
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, name: replacement}, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    return hybrid.jit((gluon.jit if isinstance(kernel, GluonJITFunction) else triton.jit)(copy))


def port_function(path: Path, name: str) -> ast.FunctionDef:
    functions = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(functions) == 1, path.read_text()
    return functions[0]


def params(fn: ast.FunctionDef) -> list[tuple[str, str | None]]:
    """Parameter names and whether each is a constexpr (``tl.``/``gl.constexpr`` alike)."""
    return [(a.arg, a.annotation.attr if isinstance(a.annotation, ast.Attribute) else None) for a in fn.args.args]


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_row_stats_port_compiles_in_its_kernel_with_the_targets_layouts(tmp_path, capfd, target):
    files = start("examples/softmax.py:row_stats", target, "softmax_triton", tmp_path, 4, translator=True)
    assert files.files == [tmp_path / f"row_stats_gluon_{target}.py", tmp_path / f"test_port_row_stats_{target}.py"]
    assert (files.function, files.kernel, files.inputs) == ("examples.softmax.row_stats", "examples.softmax.softmax_triton",
                                                            "problem")
    port = port_function(files.port, f"row_stats_gluon_{target}")
    assert [ast.unparse(d) for d in port.decorator_list] == ["gluon.jit"]
    assert params(port) == params(port_function(ROOT / "examples" / "softmax.py", "row_stats"))
    assert "\n".join(ast.unparse(s) for s in port.body) == ROW_STATS_BODY.format(target=target)
    text = files.port.read_text()
    warp = 64 if target == "gfx942" else 32
    assert f"THREADS_PER_WARP = gl.constexpr({warp})" in text and "NUM_WARPS = gl.constexpr(4)" in text
    from examples.softmax import row_stats
    line = inspect.getsourcelines(row_stats.fn)[1] + 1   # the def, below the decorator
    assert "triton_to_gluon" in text and f"examples.softmax.row_stats (examples/softmax.py:{line})" in text
    assert "helpers" not in text.replace("Layout helpers", "").replace("gluon_helpers", "")   # no translator modules

    module = load(files.port)
    kernel = swapped(softmax.softmax_triton, "row_stats", getattr(module, f"row_stats_gluon_{target}"))
    fb = hybrid.compile(kernel, softmax.SIGNATURE, {"BM": 16, "BN": 128}, target=target, num_warps=4)
    assert [r.function for r in fb.regions] == [f"row_stats_gluon_{target}"] and fb.kernel_entries
    other = "sm90a" if target == "gfx942" else "gfx942"      # the layouts are the target's: wrong elsewhere
    capfd.readouterr()
    with pytest.raises(hybrid.RegionError, match=f"region 'row_stats_gluon_{target}'"):
        hybrid.compile(kernel, softmax.SIGNATURE, {"BM": 16, "BN": 128}, target=other, num_warps=4)
    assert f"Layout has {warp} threads per warp, but the module specifies {96 - warp}" in capfd.readouterr().err
    with pytest.raises(hybrid.RegionError, match="launch the kernel with num_warps=NUM_WARPS"):
        hybrid.compile(kernel, softmax.SIGNATURE, {"BM": 16, "BN": 128}, target=target, num_warps=8)


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_port_keeps_calling_its_triton_helpers_and_gets_an_inputs_stub(tmp_path, target):
    files = start("tests/port_kernels.py:centered_square", target, None, tmp_path, 4, translator=True)   # the kernel is found
    assert files.kernel == "tests.port_kernels.k_centered" and files.still_triton == ("tests.port_kernels.halve",)
    port = port_function(files.port, f"centered_square_gluon_{target}")
    assert params(port) == [("x", None), ("n", None), ("BN", "constexpr")]
    assert "return reset_to_default_layout(halve(d * d))" in ast.unparse(port)
    assert "from tests.port_kernels import halve" in files.port.read_text()
    module = load(files.port)
    kernel = swapped(port_kernels.k_centered, "centered_square", getattr(module, f"centered_square_gluon_{target}"))
    fb = hybrid.compile(kernel, port_kernels.SIGNATURE, {"BM": 16, "BN": 64}, target=target, num_warps=4)
    assert [r.function for r in fb.regions] == [f"centered_square_gluon_{target}", "halve"]

    assert files.inputs == "stub"
    test = load(files.test)
    with pytest.raises(NotImplementedError) as info:
        test.inputs()
    message = str(info.value)
    assert f"fill in inputs() in test_port_centered_square_{target}.py" in message and "tests/port_kernels.py:30" in message
    assert "x_ptr (tensor), y_ptr (tensor), n (scalar)" in message and "BM, BN (constexprs)" in message
    assert "num_warps=4" in message
    with pytest.raises(NotImplementedError):
        getattr(test, f"test_centered_square_gluon_{target}_matches_centered_square")()


@pytest.fixture
def fake_compare(monkeypatch):
    """A stand-in ``hybrid.port.compare`` that records its calls: the first comparison agrees,
    the next ones do not."""
    fake = types.SimpleNamespace()
    fake.calls = []

    def compare(kernel, **kwargs):
        fake.calls.append((kernel, kwargs))
        return types.SimpleNamespace(ok=len(fake.calls) == 1, report=lambda: "y: max abs diff 1.0")

    fake.compare = compare
    monkeypatch.setattr(hybrid.port, "compare", compare)
    return fake


def test_the_compare_test_launches_as_the_modules_run_does(tmp_path, monkeypatch, fake_compare):
    torch = pytest.importorskip("torch")
    files = start("examples/softmax.py:row_stats", "sm90a", "softmax_triton", tmp_path, 4, translator=True)
    test = load(files.test)
    p = {"x": torch.randn(37, 97), "y": torch.empty(37, 97)}
    monkeypatch.setattr(test.original, "problem", lambda *size, device: p)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    test.test_row_stats_gluon_sm90a_matches_row_stats()
    kernel, kwargs = fake_compare.calls[0]
    assert kernel is softmax.softmax_triton and kwargs["region"] is softmax.row_stats
    assert kwargs["candidate"].fn.__name__ == "row_stats_gluon_sm90a" and kwargs["grid"] == (3, )
    assert kwargs["args"][:2] == (p["x"], p["y"]) and kwargs["args"][2:] == (37, 97, 97)
    assert kwargs["kwargs"] == {"BM": 16, "BN": 128, "num_warps": 4} and kwargs["target"] == "sm90a"
    assert test.original.softmax_triton is softmax.softmax_triton     # put back after the recording
    with pytest.raises(AssertionError, match="max abs diff 1.0"):
        test.test_row_stats_gluon_sm90a_matches_row_stats()


def test_run_variant_and_capture_launch():
    assert run_variant(softmax, "softmax_kernel") == "hybrid" and run_variant(softmax, "softmax_triton") == "triton"
    assert run_variant(port_kernels, "k_centered") is None
    with capture_launch(softmax, "softmax_kernel") as recorder:
        softmax.softmax_kernel[(4, )](1, 2, BM=3)
    assert (recorder.launch.grid, recorder.launch.args, recorder.launch.kwargs) == ((4, ), (1, 2), {"BM": 3})
    assert softmax.softmax_kernel is recorder.kernel and recorder.fn is recorder.kernel.fn
    with capture_launch(softmax, "softmax_triton") as recorder:
        pass
    with pytest.raises(LookupError, match="examples.softmax.softmax_triton was not launched"):
        recorder.launch


@pytest.mark.parametrize("spec, kernel, expected", [
    ("tests/port_kernels.py:missing", None, r"tests.port_kernels \(tests/port_kernels.py\) has no function 'missing'; "
                                            r"its @triton.jit functions: centered_square, halve, k_centered"),
    ("tests/port_kernels.py:not_jit", None, r"tests.port_kernels.not_jit \(tests/port_kernels.py:\d+\) is not a "
                                            r"@triton.jit function"),
    ("tests/port_kernels.py:already_gluon", None, r"already_gluon \(tests/port_kernels.py:\d+\) is a @gluon.jit "
                                                  r"function, already Gluon"),
    ("tests/port_kernels.py:orphan", None, r"which kernel calls tests.port_kernels.orphan\? Of the JIT functions in "
                                           r"tests/port_kernels.py, none does. Port a function that a kernel"),
    ("examples/softmax.py:row_stats", None, r"several do: softmax_kernel \(examples/softmax.py:\d+\), softmax_triton "
                                            r"\(examples/softmax.py:\d+\). Pass --kernel NAME"),
    ("tests/port_kernels.py:halve", "k_dot", r"--kernel k_dot: tests.port_kernels.k_dot \(tests/port_kernels.py:\d+\) "
                                             r"does not call halve; JIT functions that do: centered_square, k_centered"),
    ("tests/port_kernels.py:tile_dot", None, r"no port of tests.port_kernels.tile_dot \(tests/port_kernels.py:40\) "
                                             r"from Triton's IR for k_dot on sm90a: .*no value for constexpr B.*"
                                             r"pass --translator"),
])
def test_errors_say_what_and_where_and_write_nothing(tmp_path, spec, kernel, expected):
    with pytest.raises(PortError, match=expected):
        start(spec, "sm90a", kernel, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_translators_own_refusal_when_it_is_asked_for(tmp_path):
    with pytest.raises(PortError, match=r"tl.dot at tests/port_kernels.py:41 has no port here: the translator "
                                        r"writes it as `tl_dot`.*move it into a @triton.jit helper"):
        start("tests/port_kernels.py:tile_dot", "sm90a", None, tmp_path / "out", 4, translator=True)
    assert not (tmp_path / "out").exists()


def test_bad_target_and_num_warps(tmp_path):
    with pytest.raises(PortError, match="unknown target 'sm75'"):
        start("tests/port_kernels.py:centered_square", "sm75", None, tmp_path, 4)
    with pytest.raises(PortError, match="--num-warps 6: expected a power of two"):
        start("tests/port_kernels.py:centered_square", "sm90a", None, tmp_path, 6)


def test_cli_writes_the_port_and_says_how_to_run_its_test(tmp_path, capsys):
    assert cli.main(["port", "start", "tests/port_kernels.py:centered_square", "--target", "gfx942",
                     "--num-warps", "8", "--translator", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'centered_square_gluon_gfx942.py'}" in out and "for gfx942 (num_warps=8)" in out
    assert "translated by upstream's translator (layouts to tune by hand), since --translator was given" in out
    assert "fill in its inputs() first" in out and "still Triton inside the port: tests.port_kernels.halve" in out
    assert f"run: pytest {tmp_path / 'test_port_centered_square_gfx942.py'}" in out
    assert "NUM_WARPS = gl.constexpr(8)" in (tmp_path / "centered_square_gluon_gfx942.py").read_text()
    with pytest.raises(SystemExit) as exit_:   # a port that cannot start is a user error: one line, status 2
        cli.main(["port", "start", "tests/port_kernels.py:orphan", "--target", "sm90a", "-o", str(tmp_path)])
    error, = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and error.startswith("hybrid: error: which kernel calls tests.port_kernels.orphan?")
    with pytest.raises(SystemExit):
        cli.main(["port", "start", "tests/port_kernels.py:centered_square", "--target", "sm75"])
    assert "--target: unknown target 'sm75'" in capsys.readouterr().err


def test_a_kernel_without_problem_and_run_ports_from_its_ir_with_the_arguments_given(tmp_path, capsys):
    """A kernel of one's own, written as upstream's tutorials are (no problem()/run()): the
    command is given the kernel's types and constexprs, as ``hybrid build`` is, and writes the
    port from Triton's IR; types missing from what is given and the module's SIGNATURE are one
    line naming the flag."""
    assert cli.main(["port", "start", "tests/port_kernels.py:centered_square", "--target", "sm80",
                     "--kernel", "k_centered", "--constexpr", "BM=4,BN=64", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "from the IR Triton's passes produced for its call" in out
    port = (tmp_path / "centered_square_gluon_sm80.py").read_text()
    assert "gl.BlockedLayout(" in port and "--constexpr 'BM=4,BN=64'" in port   # the command that wrote it
    with pytest.raises(SystemExit) as exit_:
        cli.main(["port", "start", "tests/port_kernels.py:centered_square", "--target", "sm80", "--kernel",
                  "k_centered", "--signature", "n=i32", "--constexpr", "BM=4", "-o", str(tmp_path / "again")])
    error, = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and "no value for constexpr BN: pass --constexpr BN=VALUE" in error, error
    assert not (tmp_path / "again").exists()


def test_port_status_builds_a_kernel_without_problem_and_run_from_the_arguments_given(capsys):
    assert cli.main(["port", "status", "tests/port_kernels.py:k_centered", "--target", "sm80",
                     "--constexpr", "BM=4,BN=64"]) == 0
    out = capsys.readouterr().out
    assert "tests.port_kernels.centered_square" in out and "triton (to port)" in out


def test_the_port_is_for_the_warps_the_kernel_is_launched_with(tmp_path):
    """examples/matmul.py launches its kernel with num_warps=8: the port's layouts, its header, its
    compare test and the command it records are for 8, with no flag given; the flag overrides."""
    files = start("examples/matmul.py:tile_ids", "sm90a", "matmul_triton", tmp_path)
    assert files.num_warps == 8
    assert "NUM_WARPS = gl.constexpr(8)" in files.port.read_text() or "(8 warps)" in files.port.read_text()
    assert "--num-warps 8" in files.port.read_text()
    assert "num_warps=4" not in files.test.read_text()
