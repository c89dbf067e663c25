"""``hybrid.caller_load``: a Gluon function's load of its parameters, which the Triton kernel
calling it issues itself before the call, so that the kernel's own loop software-pipelines it as
it pipelines the all-Triton kernel's load (upstream fused softmax's persistent row loop, its row
a Gluon function: the same machine code); a plain ``gl.load`` where no caller may issue it
(after a write, of pointers the function computes, with a tensor ``other``, inside a loop of the
function, of a scalar), in a
Gluon kernel, upstream's compiler and the interpreter."""
import pytest
import torch
import triton

import hybrid
from bench import parity_ports as pp
from hybrid.port.compare import as_hybrid, with_region
from interop.instrumentation.resources import instructions
from interop.lowering import caller_loads
from interop.targets import TARGETS
from interop.triton.frontend import GluonASTSource
from tests import caller_load_kernels as k

pytestmark = pytest.mark.version


def _build(row, target: str):
    kernel = as_hybrid(pp.softmax_rows) if row is None else with_region(pp.softmax_rows, pp.softmax_row, row)
    return hybrid.compile(kernel, pp.SOFTMAX_ROWS, k.CONSTEXPRS, target, num_warps=k.NUM_WARPS)


@pytest.mark.parametrize("target", ["sm80", "gfx942"])
def test_the_kernels_loop_pipelines_a_caller_load_as_it_pipelines_tritons_own(target):
    mixed, triton_only = _build(k.softmax_row, target), _build(None, target)
    assert caller_loads.hoisted(mixed.boundaries) == 1
    assert sum(b.conversions for b in mixed.boundaries) == 0, mixed.report()
    assert f"{caller_loads.MARK} =" not in mixed.asm["ttgir"]   # (the boundary records name it)
    if target == "sm80":   # cp.async into a two-stage buffer, then read in the function's layout
        assert mixed.asm["ttgir"].count("ttg.async_copy_global_to_local") == 2
        assert (instructions(mixed.asm), mixed.metadata.shared) == \
            (instructions(triton_only.asm), triton_only.metadata.shared)
    else:   # the next row loaded ahead, into registers (two buffer loads), within a port's goal (2%)
        assert mixed.asm["ttgir"].count("amdg.buffer_load ") == 2
        ratio = instructions(mixed.asm) / instructions(triton_only.asm)
        assert 0.98 <= ratio <= 1.02 and mixed.metadata.shared == triton_only.metadata.shared, ratio


@pytest.mark.parametrize("row", [k.softmax_row_after_a_store, k.softmax_row_tensor_other,
                                 k.softmax_row_own_pointers, k.softmax_row_in_a_loop], ids=lambda fn: fn.__name__)
def test_a_load_no_caller_may_issue_stays_in_the_function(row):
    built = _build(row, "sm80")
    assert caller_loads.hoisted(built.boundaries) == 0
    assert "ttg.async_copy_global_to_local" not in built.asm["ttgir"]   # loaded when the call runs
    assert f"{caller_loads.MARK} =" not in built.asm["ttgir"]


def test_a_scalars_load_stays_and_a_tile_loaded_after_it_is_issued_by_the_caller():
    """Outside a loop too: the tile's load is the host's (and computes the same, below)."""
    signature = {"out_ptr": "*fp32", "in_ptr": "*fp32", "scale_ptr": "*fp32", "n_cols": "i32"}
    built = hybrid.compile(hybrid.jit(k.scaled_rows), signature, {"BLOCK": 1024}, "sm80", num_warps=k.NUM_WARPS)
    assert [b.value for b in built.boundaries if b.value.endswith(caller_loads.HOISTED)] == \
        ["input_ptrs" + caller_loads.HOISTED]
    x, scale, y = torch.randn(3, 1000), torch.tensor([2.5]), torch.zeros(3, 1000)
    with hybrid.interpreting(target="sm80"):
        hybrid.jit(k.scaled_rows)[(3, )](y, x, scale, 1000, BLOCK=1024, num_warps=k.NUM_WARPS)
    assert torch.equal(y, x * 2.5)


def test_a_gluon_kernel_and_upstreams_compiler_load_it_as_written():
    constexprs = {**k.CONSTEXPRS, "L": k.row_layout(32)}
    built = hybrid.compile(hybrid.jit(k.softmax_rows_gluon), pp.SOFTMAX_ROWS, constexprs, "sm80",
                           num_warps=k.NUM_WARPS)
    upstream = triton.compile(GluonASTSource(k.softmax_rows_gluon, {**pp.SOFTMAX_ROWS, **dict.fromkeys(
        constexprs, "constexpr")}, constexprs), target=TARGETS["sm80"], options={"num_warps": k.NUM_WARPS})
    for ttgir in (built.asm["ttgir"], upstream.asm["ttgir"]):
        assert ttgir.count("= tt.load ") == 1 and f"{caller_loads.MARK} =" not in ttgir


def test_the_interpreter_computes_the_rows_softmax():
    x = torch.randn(6, 1000)
    for kernel, extra in ((with_region(pp.softmax_rows, pp.softmax_row, k.softmax_row), {}),
                          (hybrid.jit(k.softmax_rows_gluon), {"L": k.row_layout(32)})):
        y = torch.zeros_like(x)
        with hybrid.interpreting(target="sm80"):
            kernel[(4, )](y, x, 1000, 1000, 6, 1000, **k.CONSTEXPRS, **extra, num_warps=k.NUM_WARPS)
        torch.testing.assert_close(y, torch.softmax(x, dim=1))
