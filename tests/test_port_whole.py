"""The last step of a port: a whole ``@triton.jit`` kernel written as a ``@gluon.jit`` kernel from its
own TritonGPU IR (``hybrid port start MODULE:KERNEL``), with no Triton region left and the
kernel's machine code; ``hybrid port status`` following a port to that step; and port start,
port status and ``hybrid report`` counting one kernel's instructions alike."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import triton
import triton.language as tl

import hybrid
from examples import attention, matmul, softmax
from hybrid import cli
from hybrid.port import PortError, capture_launch, compare, start
from hybrid.port.compare import as_hybrid, figures
from hybrid.port.from_ttgir import load_port
from hybrid.port.scaffold import load
from hybrid.port.status import status
from hybrid.port.whole_kernel import port_kernel
from interop.targets import TARGETS
from interop.triton.frontend import GluonJITFunction
from scheduler.planning import plan, resolve

pytestmark = [pytest.mark.version, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
#: Upstream-style kernels: the tutorial's matmul (a tl.dot K loop), attention forward (two dots per
#: KV block, online softmax); each module's all-Triton kernel, built as its benchmark builds it.
KERNELS = {matmul: "matmul_triton", attention: "attention_triton"}
#: Sizes small enough for the interpreter: a few programs each.
SIZES = {matmul: (200, 300, 100), attention: (1, 1, 128)}


def _port(example, target: str, tmp_path: Path):
    kernel = getattr(example, KERNELS[example])
    ported = port_kernel(kernel, example.SIGNATURE, example.tiles(target), target,
                         path=tmp_path / f"{KERNELS[example]}_gluon_{target}.py", divisible=example.DIVISIBLE,
                         **example.options(target))
    return kernel, ported, load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("example", list(KERNELS), ids=list(KERNELS.values()))
def test_the_whole_kernel_ports_to_gluon_with_no_triton_region_at_parity(example, target, tmp_path):
    kernel, ported, candidate = _port(example, target, tmp_path)
    assert isinstance(candidate, GluonJITFunction) and "triton.jit" not in ported.source
    assert [p.name for p in candidate.params] == [p.name for p in kernel.params]   # launched as the kernel is
    built = hybrid.compile(as_hybrid(candidate), example.SIGNATURE, example.tiles(target), target,
                           divisible=example.DIVISIBLE, **example.options(target))
    assert not any(r.language == "triton" for r in built.regions)
    assert "hybrid.triton_host" not in built.asm["ttgir"]   # built as a Gluon kernel, not a Triton host
    original, port = ported.machine["original"], ported.machine["port"]
    assert figures(built) == port
    assert port["instructions"] <= 1.02 * original["instructions"], ported.machine   # the parity goal
    assert port["shared_bytes"] <= original["shared_bytes"], ported.machine
    assert ("warpgroup_mma(" if target == "sm90a" else "mfma(" if target == "gfx942" else "(") in ported.source


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
@pytest.mark.parametrize("example", list(KERNELS), ids=list(KERNELS.values()))
def test_the_whole_kernel_port_computes_what_the_kernel_computes(example, target, tmp_path):
    pytest.importorskip("torch")
    kernel, _, candidate = _port(example, target, tmp_path)
    with capture_launch(example, KERNELS[example]) as recorder:
        example.run("triton", example.problem(*SIZES[example], device="cpu"), target)
    launch = recorder.launch
    result = compare(kernel, candidate=candidate, grid=launch.grid, args=launch.args, kwargs=launch.kwargs,
                     interpret=True, target=target, machine_code_report=False, atol=1e-3, rtol=1e-3)
    assert result.ok and result.outputs, result.report()


def test_port_start_on_a_kernel_writes_the_whole_kernel_and_its_compare_test(tmp_path, capsys):
    assert cli.main(["port", "start", "examples/softmax.py:softmax_triton", "--target", "gfx942",
                     "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "examples.softmax.softmax_triton as a @gluon.jit kernel for gfx942 (num_warps=4)" in out
    assert "built as: gfx942, num_warps=4, BM=16, BN=128 (as examples.softmax.run('triton')" in out
    assert "as examples.softmax.softmax_triton does" in out   # the same machine code
    port = (tmp_path / "softmax_triton_gluon_gfx942.py").read_text()
    assert ("def softmax_triton_gluon_gfx942(x_ptr, y_ptr, n_rows, n_cols, stride, BM: gl.constexpr, "
            "BN: gl.constexpr):") in port
    assert "gl.static_assert(BM == 16, " in port   # a value Triton folded in, asserted
    test = (tmp_path / "test_port_softmax_triton_gfx942.py").read_text()
    assert "compare(original.softmax_triton, candidate=softmax_triton_gluon_gfx942, " in test
    with pytest.raises(SystemExit) as exit_:
        cli.main(["port", "start", "examples/softmax.py:softmax_triton", "--target", "gfx942", "--translator"])
    error, = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and "is ported whole from Triton's IR" in error


def test_port_start_port_status_and_report_count_one_kernel_alike(tmp_path):
    """One build (softmax_triton as its module launches it; the module's defaults, which report
    uses, are the same values) and one count of its machine instructions, said with the figures."""
    files = start("examples/softmax.py:row_stats", "sm90a", "softmax_triton", tmp_path)
    found = status(softmax, "softmax_triton", "sm90a")
    spec = resolve(plan(["examples/softmax.py:softmax_triton"], ["sm90a"])[0])
    report = hybrid.compile(spec.fn, spec.signature, spec.constexprs, target="sm90a", **spec.options).report()
    assert files.machine["original"]["instructions"] == found.instructions == report["totals"]["instructions"]
    assert files.built_as == found.built_as and found.built_as.startswith("sm90a, num_warps=4, BM=16, BN=128 (")
    assert sum(f.instructions for f in found.functions) + found.unattributed == found.instructions
    shown = subprocess.run([sys.executable, "-m", "hybrid.cli", "report", "examples/softmax.py:softmax_triton",
                            "--target", "sm90a"], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert f"built as: {found.built_as.split(' (')[0]} (" in shown   # report says the build it counted
    assert f"{found.instructions} instructions" in shown


def test_status_follows_a_swapped_in_port_to_the_whole_kernel_step(tmp_path, capsys, monkeypatch):
    """Ported and swapped in (the kernel calls the @gluon.jit port), a helper is Gluon, its combine
    functions counted with it; with only the kernel's body left, status says to port it whole, and
    that port, which calls the Gluon port as the kernel does, builds to the kernel's machine code."""
    start("examples/softmax.py:row_stats", "sm90a", "softmax_triton", tmp_path)
    # this port, not one another test of the process imported under the same name (the translator's)
    monkeypatch.delitem(sys.modules, "row_stats_gluon_sm90a", raising=False)
    source = Path(softmax.__file__).read_text()
    body = source.index("def softmax_triton(")
    source = source[:body] + source[body:].replace("row_stats(x, n_cols, BN)", "row_stats_gluon_sm90a(x, n_cols, BN)", 1)
    (tmp_path / "softmax_swapped.py").write_text(
        source.replace("import hybrid\n", "import hybrid\nfrom row_stats_gluon_sm90a import row_stats_gluon_sm90a\n", 1))
    spec = f"{tmp_path / 'softmax_swapped.py'}:softmax_triton"
    found = status(load(str(tmp_path / "softmax_swapped.py")), "softmax_triton", "sm90a")
    assert [(f.function, f.language) for f in found.functions] == [
        ("softmax_swapped.softmax_triton", "triton"), ("row_stats_gluon_sm90a.row_stats_gluon_sm90a", "gluon")]
    assert found.body_left and not found.to_port and found.functions[1].instructions > 0
    assert cli.main(["port", "status", spec, "--target", "sm90a"]) == 0
    out = capsys.readouterr().out
    assert "triton (kernel body)" in out and "triton (to port)" not in out
    assert f"the last step ports it whole: hybrid port start {spec} --target sm90a" in " ".join(out.split())
    assert cli.main(["port", "start", spec, "--target", "sm90a", "-o", str(tmp_path / "whole")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "as softmax_swapped.softmax_triton does" in out   # the same machine code
    assert "calls, as the kernel does: row_stats_gluon_sm90a" in out
    written = tmp_path / "whole" / "softmax_triton_gluon_sm90a.py"
    port = written.read_text()
    assert "@triton.jit" not in port and "triton.language" not in port
    assert "from row_stats_gluon_sm90a import row_stats_gluon_sm90a" in port
    assert re.search(r"\n    m, s = row_stats_gluon_sm90a\(\w+, n_cols, BN\)\n", port)   # the call kept
    swapped = load(str(tmp_path / "softmax_swapped.py"))
    with capture_launch(swapped, "softmax_triton") as recorder:
        swapped.run("triton", swapped.problem(40, 97, device="cpu"), "sm90a")
    launch = recorder.launch
    result = compare(swapped.softmax_triton, candidate=load_port(port, written.stem, written),
                     grid=launch.grid, args=launch.args, kwargs=launch.kwargs, interpret=True, target="sm90a",
                     machine_code_report=False)
    assert result.ok and result.outputs, result.report()


def test_status_suggests_the_next_function_by_its_real_name(capsys):
    assert cli.main(["port", "status", "examples/softmax.py:softmax_triton", "--target", "gfx942"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "triton (kernel body)" in out and "triton (to port)" in out
    assert ("next: hybrid port start examples/softmax.py:row_stats --target gfx942 --kernel softmax_triton "
            "(or the whole kernel at once: hybrid port start examples/softmax.py:softmax_triton --target gfx942)") in out
    assert "built as: gfx942, num_warps=4, BM=16, BN=128" in out
    assert cli.main(["port", "status", "examples/softmax.py:softmax_kernel", "--target", "gfx942"]) == 0
    out = " ".join(capsys.readouterr().out.split())   # a Gluon kernel: its Triton function, never a whole-kernel port
    assert out.endswith("next: hybrid port start examples/softmax.py:row_stats --target gfx942 --kernel softmax_kernel")


@triton.jit
def _histogram_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.histogram(tl.load(x_ptr + offs), BLOCK))


def test_a_kernel_with_an_op_the_port_cannot_write_is_refused_naming_it(tmp_path):
    with pytest.raises(PortError, match=r"_histogram_kernel cannot be written as Gluon for sm80: tt\.histogram at "
                                        r"\S*test_port_whole\.py:\d+: .* Nothing was written"):
        port_kernel(_histogram_kernel, {"x_ptr": "*i32", "y_ptr": "*i32"}, {"BLOCK": 128}, "sm80",
                    path=tmp_path / "histogram.py", num_warps=4)
    assert not list(tmp_path.iterdir())
