"""``hybrid.port.from_ttgir``: ports written from the TritonGPU IR Triton's passes produced for a
Gluon kernel's call of a ``@triton.jit`` function. Swapped back in, the kernel builds to the same
machine code (real builds for each target, no GPU needed); the port computes what the Triton
function computed (interpreter); what it cannot write is refused with the op and its line."""
from pathlib import Path

import pytest

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

import hybrid  # noqa: E402
from bench import parity_ports as pp  # noqa: E402
from examples import softmax  # noqa: E402
from examples.layernorm import row_moments_triton  # noqa: E402
from examples.layouts import row_layout  # noqa: E402
from hybrid.port import PortError, from_ttgir, with_region  # noqa: E402
from interop.resources import instructions, resources  # noqa: E402

MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
LAYERNORM = {"x_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "y_ptr": "*fp16", "n_cols": "i32", "eps": "fp32"}


def _figures(fb) -> tuple:
    """Instructions, registers, shared bytes and boundary conversions of a hybrid build."""
    return (*_figures_of(fb), sum(b.conversions for b in fb.boundaries))


def _parity(fn, kernel, signature, constexprs, target, tmp_path: Path, **options):
    """(port, figures without the port, figures with it)."""
    ported = from_ttgir.port(kernel, fn, signature, constexprs, target, **options)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    swapped = hybrid.compile(with_region(kernel, fn, candidate), signature, constexprs, target, **options)
    assert fn.__name__ not in {r.function for r in swapped.regions if r.language == "triton"}   # the port is in
    original = hybrid.compile(kernel, signature, constexprs, target, **options)
    return ported, _figures(original), _figures(swapped)


@pytest.mark.parametrize("target", ["sm80", "gfx950"])   # (Triton 3.6 cannot build this kernel for gfx942)
def test_an_elementwise_helper_ports_at_parity_in_the_hosts_mma_layout(target, tmp_path):
    constexprs = pp.matmul_act_gluon_host_constexprs(target)
    ported, before, after = _parity(pp.leaky_relu, pp.matmul_act_gluon_host, MATMUL, constexprs, target, tmp_path,
                                    num_warps=4, divisible=("K", ))
    assert after == before, (before, after)
    layout = "gl.NVMMADistributedLayout(" if target == "sm80" else "gl.amd.AMDMFMALayout("
    assert ported.source.count(layout) == 1                           # named once, at the top
    assert "# return tl.where(x >= 0, x, 0.01 * x)" in ported.source    # each block marked with its source line
    assert "def leaky_relu_gluon_" + target + "(x):" in ported.source


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_a_reduction_ports_at_parity_with_its_combine_function(target, tmp_path):
    constexprs = {"BM": 4, "BN": 1024, "L": row_layout(target, 4, 1024, 8)}
    ported, before, after = _parity(row_moments_triton, pp.layernorm_gluon_host, LAYERNORM, constexprs, target,
                                    tmp_path, num_warps=4, divisible=("n_cols", ))
    assert after == before, (before, after)
    assert "gl.reduce(" in ported.source and "def combine_" in ported.source
    assert "mean_2" in ported.source and "rstd" in ported.source   # the source's variable names


#: Per target, what the port of a pipelined tl.dot mainloop must call: the MMA and its operand staging.
MMA_CALLS = {   # (what each Triton release stages around them differs: 3.9 slices operands, fences, pads)
    "sm80": ("mma_v2(", "async_copy.commit_group()", "async_copy.wait_group("),
    "sm90a": ("warpgroup_mma(", "warpgroup_mma_wait("),
    "sm100a": ("tcgen05_mma(", "allocate_tensor_memory(", "mbarrier.wait(", "TensorMemoryLayout("),
    "gfx950": ("mfma(", ),
}


@pytest.mark.parametrize("target", sorted(MMA_CALLS))
def test_a_pipelined_dot_mainloop_ports_at_parity(target, tmp_path):
    """tl.dot as the target's MMA, with the shared-memory buffers, async copies and waits Triton's
    pipeliner chose, loops as loops."""
    constexprs = pp.matmul_act_gluon_host_constexprs(target)
    ported, before, after = _parity(pp.mainloop, pp.matmul_act_gluon_host, MATMUL, constexprs, target, tmp_path,
                                    num_warps=4, divisible=("K", ))
    instructions, _, shared, conversions = after
    assert instructions <= before[0] * 1.02, (before, after)
    assert shared <= before[2] and conversions <= before[3], (before, after)
    for call in MMA_CALLS[target] + ("gl.allocate_shared_memory(", "for "):
        assert call in ported.source, call


def test_the_port_computes_what_the_triton_function_did(tmp_path):
    torch = pytest.importorskip("torch")
    from hybrid.port import compare
    ported = from_ttgir.port(softmax.softmax_kernel, softmax.row_stats, softmax.SIGNATURE,
                             softmax.constexprs("sm90a"), "sm90a", num_warps=softmax.NUM_WARPS)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    n_rows, n_cols = 40, 97
    p = softmax.problem(n_rows, n_cols, device="cpu")
    result = compare(softmax.softmax_kernel, region=softmax.row_stats, candidate=candidate,
                     grid=(triton.cdiv(n_rows, softmax.BM), ), args=(p["x"], p["y"], n_rows, n_cols, p["x"].stride(0)),
                     kwargs={"num_warps": softmax.NUM_WARPS, **softmax.constexprs("sm90a")}, interpret=True,
                     target="sm90a", atol=1e-6, rtol=1e-6)
    assert result.ok, result.report()
    machine = result.machine   # built for the target beside the run: the same machine code
    assert machine["original"] == machine["candidate"] and machine["original"]["instructions"] > 0, machine
    assert "machine code (sm90a), original -> with the candidate: instructions" in result.report()
    assert torch.isfinite(p["x"]).all()


@triton.jit
def _histogram_helper(x, BINS: tl.constexpr):
    return tl.histogram(x, BINS)


@hybrid.jit
@gluon.jit
def _histogram_host(x_ptr, y_ptr, L: gl.constexpr):
    offs = gl.arange(0, 128, layout=L)
    h = _histogram_helper(gl.load(x_ptr + offs), 128)
    gl.store(y_ptr + offs, h)


def test_an_op_the_port_cannot_write_is_refused_with_its_line(tmp_path):
    layout = gl.BlockedLayout([1], [32], [4], [0])
    with pytest.raises(PortError) as caught:
        from_ttgir.port(_histogram_host, _histogram_helper, {"x_ptr": "*i32", "y_ptr": "*i32"}, {"L": layout}, "sm80",
                        num_warps=4)
    message = str(caught.value)
    assert "tt.histogram" in message and f"test_port_ttgir.py:{_histogram_helper.fn.__code__.co_firstlineno + 2}" \
        in message, message
    assert "Nothing was written" in message


def test_a_port_for_a_triton_kernel_takes_the_layouts_triton_gave_the_call(tmp_path):
    """Swapped into the all-Triton matmul, the port is a Gluon region built for the operand layouts
    Triton chose there: it builds to what the hand-written Gluon helper builds to (the conversion
    of the result at the boundary is the Triton host's, and counted), and computes the same."""
    torch = pytest.importorskip("torch")
    from hybrid.port import compare
    tiles = {"BM": 128, "BN": 128, "BK": 64}
    options = {"num_warps": 4, "divisible": ("K", )}
    ported = from_ttgir.port(pp.matmul_act_triton, pp.leaky_relu, MATMUL, tiles, "sm80", **options)
    assert "MMA: gl.constexpr = gl.NVMMADistributedLayout(" in ported.source   # the layout Triton gave the operand
    assert "x = gl.convert_layout(x, MMA)" in ported.source   # a no-op for the layout it arrives in
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    swapped = hybrid.compile(with_region(pp.matmul_act_triton, pp.leaky_relu, candidate), MATMUL, tiles, "sm80",
                             **options)
    by_hand = hybrid.compile(with_region(pp.matmul_act_triton, pp.leaky_relu, pp.leaky_relu_gluon), MATMUL, tiles,
                             "sm80", **options)
    assert _figures(swapped) == _figures(by_hand)
    a = torch.randn(128, 64, dtype=torch.float16)
    b = torch.randn(64, 128, dtype=torch.float16)
    c = torch.zeros(128, 128, dtype=torch.float16)
    result = compare(pp.matmul_act_triton, region=pp.leaky_relu, candidate=candidate, grid=(1, 1), args=(a, b, c, 64),
                     kwargs={**tiles, "num_warps": 4}, interpret=True, target="sm80", atol=1e-2, rtol=1e-2)
    assert result.ok, result.report()


@pytest.mark.parametrize("kernel", ["softmax_kernel", "softmax_triton"])
def test_port_start_writes_the_ir_port_and_its_test_passes(tmp_path, kernel):
    """``hybrid port start`` end to end, for a Gluon and a Triton kernel: the port written from
    Triton's IR (for the kernel's launch on the module's problem()), its generated test, the interpreter."""
    from hybrid.port import start
    from tests.port_kernels import run_generated_test
    files = start("examples/softmax.py:row_stats", "gfx942", kernel, tmp_path, 4)
    assert (files.method, files.translated_because) == ("ir", "")
    text = files.port.read_text()
    assert "x = gl.convert_layout(x, BLOCKED)" in text and "gl.reduce(" in text and "Written by: hybrid port start" in text
    run_generated_test(files, "test_row_stats_gluon_gfx942_matches_row_stats")


def test_port_start_falls_back_to_the_translator_and_says_why(tmp_path):
    from hybrid.port import start
    files = start("tests/port_kernels.py:centered_square", "sm90a", None, tmp_path, 4)
    assert files.method == "translator"
    assert "problem()" in files.translated_because   # the module gives no launch to build the kernel for


def test_port_status_lists_each_function_with_its_language_and_instructions():
    from hybrid.port.scaffold import load
    from hybrid.port.status import status
    found = status(load("examples/softmax.py"), "softmax_kernel", "sm90a")
    by_name = {f.function: f for f in found.functions}
    assert by_name["examples.softmax.softmax_kernel"].language == "gluon"
    assert by_name["examples.softmax.row_stats"].language == "triton" and not found.done
    assert all(f.instructions > 0 for f in found.functions)
    assert sum(f.instructions for f in found.functions) + found.unattributed == found.instructions


def test_port_status_command_prints_the_table_and_refuses_cleanly(capsys):
    from hybrid.cli import main
    assert main(["port", "status", "examples/softmax.py:softmax_triton", "--target", "sm80"]) == 0
    out = capsys.readouterr().out
    assert "row_stats" in out and "triton (to port)" in out and "still Triton" in out
    with pytest.raises(SystemExit) as exit_:
        main(["port", "status", "examples/softmax.py:nothing_here", "--target", "sm80"])
    error, = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and error.startswith("hybrid: error: ") and "no JIT kernel named 'nothing_here'" in error


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_masked_memory_scans_atomics_libdevice_and_unsigned_ops_port_at_parity(target, tmp_path):
    from tests import ttgir_port_kernels as k
    constexprs = {"BLOCK": k.BLOCK, "L": k.layout(target)}
    ported, before, after = _parity(k.mixed, k.mixed_kernel, k.SIGNATURE, constexprs, target, tmp_path, num_warps=4)
    if target == "gfx942":   # port_parity's goal: the region converts arithmetic on ``offs`` for its scan; as a
        # region that conversion is the boundary's, and the host builds ``offs`` in that layout instead
        # (``interop/remat.py``); the port converts its argument itself (Gluon code, kept as written)
        assert "offs = gl.convert_layout(offs, " in ported.source
        assert after[0] <= before[0] * 1.02 and after[2:] == before[2:], (before, after)
    else:
        assert after == before, (before, after)
    for call in ("gl.associative_scan(", "gl.atomic_add(", "libdevice.erf(", "gl.uint32, bitcast=True",
                 "mask="):
        assert call in ported.source, call


def test_masked_memory_scans_atomics_libdevice_and_unsigned_ops_compute_the_same(tmp_path):
    torch = pytest.importorskip("torch")
    from hybrid.port import compare
    from tests import ttgir_port_kernels as k
    constexprs = {"BLOCK": k.BLOCK, "L": k.layout("sm80")}
    ported = from_ttgir.port(k.mixed_kernel, k.mixed, k.SIGNATURE, constexprs, "sm80", num_warps=4)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    n = 200
    args = (torch.randn(k.BLOCK), torch.randint(-2**31, 2**31 - 1, (k.BLOCK, ), dtype=torch.int32),
            torch.zeros(k.BLOCK), torch.zeros(1), n)
    result = compare(k.mixed_kernel, region=k.mixed, candidate=candidate, grid=(1, ), args=args,
                     kwargs={**constexprs, "num_warps": 4}, interpret=True, target="sm80", atol=1e-5, rtol=1e-5)
    assert result.ok, result.report()
    assert {o.name for o in result.outputs} == {"y_ptr", "total_ptr"}


def test_with_its_last_triton_function_ported_the_kernel_is_plain_gluon_with_the_same_machine_code(tmp_path):
    from examples.layouts import compile_pure
    from hybrid.port.scaffold import load
    from hybrid.port.status import status
    target = "sm90a"
    ported = from_ttgir.port(softmax.softmax_kernel, softmax.row_stats, softmax.SIGNATURE, softmax.constexprs(target),
                             target, num_warps=4)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    plain = gluon.jit(with_region(softmax.softmax_kernel, softmax.row_stats, candidate).fn)   # no hybrid.jit
    built = compile_pure(plain, softmax.SIGNATURE, softmax.constexprs(target), target, 4)
    assert _figures_of(built) == _figures_of(hybrid.compile(softmax.softmax_kernel, softmax.SIGNATURE,
                                                            softmax.constexprs(target), target, num_warps=4))
    assert not status(load("examples/softmax.py"), "softmax_kernel", target).done   # the module itself still calls Triton


def _figures_of(compiled) -> tuple:
    """Instructions, registers and shared bytes of any build (hybrid or plain)."""
    metadata = compiled.metadata if isinstance(compiled.metadata, dict) else compiled.metadata._asdict()
    found = resources(compiled.asm, metadata)
    return instructions(compiled.asm), found["registers"], found["shared_bytes"]


def test_the_probe_of_a_function_that_returns_nothing_calls_it_as_a_statement():
    """A Triton helper that only stores (layer norm's ``normalize``, mma_handoff's ``store_c``):
    its probe must not use the missing result as a value, which is a RegionError (NoResultError)."""
    from examples.layernorm import normalize, row_moments_triton
    from hybrid.port.from_ttgir import probe
    assert "    return row_moments_triton(" in probe(row_moments_triton).src
    body = probe(normalize).src.splitlines()[-1]
    assert body.strip().startswith("normalize(") and "return" not in body


def test_a_loop_carrying_an_async_wgmma_accumulator_ports_and_builds():
    """attention's KV loop on sm90a, pipelined: the loop carries the async wgmma's result, which
    Gluon types as a warpgroup_mma_accumulator, so the carried value starts as one
    (``warpgroup_mma_init``); the port used to fail to build ("Loop carried variable changed type")."""
    from bench import port_parity
    from hybrid.port import from_ttgir
    fn, kernel, signature, constexprs, options = next(c for c in port_parity.cases("sm90a")
                                                      if c[0].__name__ == "kv_loop")
    ported = from_ttgir.port(kernel, fn, signature, constexprs, "sm90a", **options)   # built once inside
    assert "= warpgroup_mma_init(" in ported.source and "is_async=True" in ported.source
