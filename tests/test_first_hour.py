"""A new user's first hour: a launch without a GPU, the CLI on one's own file, a region error's
reason, no warning on a plain run, the version and ``help(hybrid)``."""
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
from triton.experimental.gluon import language as gl

import hybrid
from hybrid import cli
from hybrid.jit_functions import gpu_driver_active
from interop.entry import constexpr_text
from scheduler.planning import module_constexprs

ROOT = Path(__file__).resolve().parents[1]

#: the user's own kernel file: two kernels taking different constexprs, a Triton helper with a bug
USER_FILE = '''
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
import hybrid


@triton.jit
def scale(x, s):
    return x * s


@triton.jit
def bad_sum(x):
    return tl.sum(x, axis=2)


@hybrid.jit
@gluon.jit
def g_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=L)
    x = gl.load(x_ptr + offs, mask=offs < n)
    gl.store(y_ptr + offs, scale(x, 2.0), mask=offs < n)


@hybrid.jit
@gluon.jit
def g_other(x_ptr, n, BM: gl.constexpr, L: gl.constexpr):
    offs = gl.program_id(0) * BM + gl.arange(0, BM, layout=L)
    gl.store(x_ptr + offs, scale(gl.load(x_ptr + offs, mask=offs < n), 3.0), mask=offs < n)


@hybrid.jit
@gluon.jit
def g_bad(x_ptr, L: gl.constexpr):
    offs = gl.arange(0, 32, layout=gl.SliceLayout(1, L))[:, None] * 32 + \\
        gl.arange(0, 32, layout=gl.SliceLayout(0, L))[None, :]
    s = bad_sum(gl.load(x_ptr + offs))
    gl.store(x_ptr + gl.arange(0, 32, layout=gl.SliceLayout(1, L)), s)


@gluon.jit
def bad_gluon_sum(x):
    return gl.sum(x, axis=2)


@hybrid.jit
@triton.jit
def t_bad(x_ptr):
    offs = tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(x_ptr + tl.arange(0, 32), bad_gluon_sum(tl.load(x_ptr + offs)))
'''

SIGNATURE_AND_CONSTEXPRS = '''

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def constexprs(target):   # one set for the module's kernels: each takes only its own
    lanes = 64 if target.startswith("gfx") else 32
    return {"BLOCK": 256, "BM": 128, "L": gl.BlockedLayout([1], [lanes], [4], [0])}
'''


def hybrid_cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hybrid.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, timeout=600)


@pytest.fixture
def user_dir(tmp_path):
    (tmp_path / "mykern.py").write_text(USER_FILE)
    return tmp_path


@pytest.fixture
def user_module(user_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(user_dir))
    import importlib
    sys.modules.pop("mykern", None)
    return importlib.import_module("mykern")


# -- a launch without a GPU ---------------------------------------------------------------------

@pytest.mark.skipif(gpu_driver_active(), reason="a GPU driver is active here: launches run on it")
def test_a_launch_without_a_gpu_says_how_to_run_in_the_interpreter(user_module):
    x, y = torch.randn(100), torch.empty(100)
    L = gl.BlockedLayout([1], [32], [4], [0])
    with pytest.raises(hybrid.NoGPUError) as info:
        user_module.g_kernel[(1,)](x, y, 100, BLOCK=128, L=L)
    message = str(info.value)
    assert "g_kernel[grid](...): no GPU here" in message
    assert "with hybrid.interpreting():" in message and "HYBRID_INTERPRET=1" in message
    assert "active drivers" not in message and info.value.__suppress_context__
    with hybrid.interpreting(target="sm80"):   # what the message says works
        user_module.g_kernel[(1,)](x, y, 100, BLOCK=128, L=L)
    torch.testing.assert_close(y, 2 * x)


# -- the CLI on one's own file --------------------------------------------------------------------

def test_a_kernel_without_signature_is_one_line_naming_the_options(user_dir):
    proc = hybrid_cli("build", "mykern.py:g_kernel", "--target", "sm80", "-o", "dist", "--no-cache", cwd=user_dir)
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    assert proc.returncode == 1 and len(failed) == 1, proc.stdout + proc.stderr[-2000:]
    assert "mykern.py:g_kernel: no type for x_ptr, y_ptr, n: pass --signature x_ptr=TYPE,y_ptr=TYPE,n=TYPE" \
        in failed[0] and "SIGNATURE" in failed[0]
    assert "no value for constexpr BLOCK, L: pass --constexpr BLOCK=VALUE" in failed[0]
    assert str(user_dir) not in failed[0]   # the file as the user named it, relative to where they are


@pytest.mark.slow
def test_layouts_on_the_command_line_in_gluon_syntax(user_dir):
    """No SIGNATURE, no constexprs(): everything from the command line, a layout included; no
    --target: every target (a wave64 layout is rejected on AMD, by the compiler, per target)."""
    proc = hybrid_cli("report", "mykern.py:g_kernel", "--signature", "x_ptr=*fp32,y_ptr=*fp32,n=i32",
                      "--constexpr", "BLOCK=128,L=gl.BlockedLayout([1], [32], [4], [0])", cwd=user_dir)
    assert proc.returncode != 0
    for target in ("sm80", "sm90a", "sm100a"):
        assert f"g_kernel on {target}:" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert "runs 64-thread warps" in proc.stderr and "g_kernel on gfx942" not in proc.stdout
    assert not (user_dir / "build").exists()   # report writes no file unasked


def test_constexpr_text_is_parsed_not_evaluated():
    assert constexpr_text.split_assignments("A=1,L=gl.BlockedLayout([1],[32],[4],[0]),S='a,b'") == \
        ["A=1", "L=gl.BlockedLayout([1],[32],[4],[0])", "S='a,b'"]
    assert [constexpr_text.job_value(t) for t in ("64", "true", "fast", "[1, 2]")] == [64, True, "fast", [1, 2]]
    text = "gl.SliceLayout(1, gl.BlockedLayout(size_per_thread=[1, 4], threads_per_warp=[8, 4], " \
           "warps_per_cta=[4, 1], order=[1, 0]))"
    job = constexpr_text.job_value(text)
    assert job == {"expr": text}
    assert constexpr_text.value(job) == gl.SliceLayout(1, gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]))
    assert constexpr_text.value(constexpr_text.job_value("gl.float16")) == gl.float16
    for bad, why in [("os.system('true')", "names must start with gl"), ("__import__('os')", "only numbers"),
                     ("gl.load(1)", "not a Gluon layout constructor"), ("gl.BlockedLayout.__init__", "must start"),
                     ("gl.BlockedLayout([1], [32])", "rejects these arguments")]:
        with pytest.raises(constexpr_text.ConstexprSyntaxError, match=why):
            constexpr_text.job_value(bad)
    args = cli.parser().parse_args(["build", "m.py:k", "--constexpr", "BM=64,L=gl.BlockedLayout([1],[32],[4],[0])"])
    assert cli.assignments(args.constexpr, constexpr_text.job_value) == \
        {"BM": 64, "L": {"expr": "gl.BlockedLayout([1],[32],[4],[0])"}}


@pytest.mark.slow
def test_module_constexprs_per_kernel(user_dir):
    """A module's constexprs(target) gives each kernel its own arguments' values; constexprs(target,
    kernel) chooses per kernel; both kernels build (was: ValueError: 'BM' is not in list)."""
    (user_dir / "mykern.py").write_text(USER_FILE + SIGNATURE_AND_CONSTEXPRS)
    proc = hybrid_cli("report", "mykern.py:g_kernel", "mykern.py:g_other", "--target", "sm80", cwd=user_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "g_kernel on sm80:" in proc.stdout and "g_other on sm80:" in proc.stdout
    per_kernel = types.SimpleNamespace(constexprs=lambda target, kernel: {"BM": 64 if kernel == "a" else 32, "X": 1})
    assert module_constexprs(per_kernel, "a", "sm80", ["BM"]) == {"BM": 64}
    assert module_constexprs(per_kernel, "b", "sm80", ["BM", "X"]) == {"BM": 32, "X": 1}
    with_options = types.SimpleNamespace(constexprs=lambda target, HEAD_DIM=64: {"D": HEAD_DIM})   # not per kernel
    assert module_constexprs(with_options, "a", "sm80", ["D"]) == {"D": 64}


def test_a_kernel_name_typo_names_the_file_and_its_kernels(user_dir):
    (user_dir / "mykern.py").write_text(USER_FILE + SIGNATURE_AND_CONSTEXPRS)
    proc = hybrid_cli("build", "mykern.py:g_kernl", "--target", "sm80", "-o", "dist", "--no-cache", cwd=user_dir)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    error, = proc.stderr.splitlines()   # checked before any build: one line
    assert error.startswith("hybrid: error: ") and "no JIT kernel named 'g_kernl' in mykern.py" in error, error
    assert "g_kernel, g_other" in error and "_hybrid_kernels_" not in error
    proc = hybrid_cli("build", "mykern.py:g_kernel", "--target", "sm80", "--constexpr", "BLCK=64", cwd=user_dir)
    assert "constexpr(s) BLCK given, but the kernel has no such argument" in proc.stdout + proc.stderr


# -- a region error carries its reason ------------------------------------------------------------

@pytest.mark.parametrize("kernel,region,constexprs", [("g_bad", "bad_sum", True), ("t_bad", "bad_gluon_sum", False)])
def test_a_bug_inside_a_region_carries_its_reason(user_module, kernel, region, constexprs):
    """A Triton helper in a Gluon kernel and a Gluon helper in a Triton kernel: the message itself
    gives Triton's reason, not only the chained traceback."""
    layout = {"L": gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])} if constexprs else {}
    with pytest.raises(hybrid.RegionError) as info:
        hybrid.compile(getattr(user_module, kernel), {"x_ptr": "*fp32"}, layout, target="sm80")
    message = str(info.value)
    assert f"region '{region}'" in message and "axis=2)" in message
    assert "invalid axis 2. Expected -2 <= axis < 2" in message, message


# -- no warning on a plain run; version; help --------------------------------------------------------

@pytest.mark.slow
def test_a_plain_run_prints_no_fp_fusion_warning_and_keeps_the_users_setting(tmp_path):
    script = textwrap.dedent("""
        import os, warnings
        warnings.simplefilter("error")
        import hybrid
        from examples.softmax import build
        build("sm80")
        print(os.environ["TRITON_DEFAULT_FP_FUSION"])
    """)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_DEFAULT_FP_FUSION"}
    for given, expected in ((None, "1"), ("0", "0")):
        proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env={**env, "PYTHONPATH": str(ROOT),
                                   **({"TRITON_DEFAULT_FP_FUSION": given} if given else {})})
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.split()[-1] == expected and "FP_FUSION" not in proc.stderr


def test_version_and_help_show_the_api():
    import pydoc
    from importlib import metadata
    try:
        assert hybrid.__version__ == metadata.version("triton-hybrid")
    except metadata.PackageNotFoundError:   # a checkout on PYTHONPATH: pyproject's
        assert f'version = "{hybrid.__version__}"' in (ROOT / "pyproject.toml").read_text()
    text = pydoc.render_doc(hybrid, renderer=pydoc.plaintext)
    for name in ("compile", "jit", "FusedBinary", "interpreting", "load_bundle", "NoGPUError"):
        assert name in dir(hybrid) and f"    {name} " in text, name
