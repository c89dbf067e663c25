"""Forms of Triton's IR that real library kernels give the whole-kernel port
(``hybrid.port.whole_kernel``): an early ``return`` (a branch, not a region), a loop counter
used as a tensor (a Python int in the interpreter), a scan whose combine function uses a
constant Triton hoisted out of it, a reshape to its own type; and an AMD ``tl.dot`` of f32 at
tf32, which Gluon's ``mfma`` cannot build (``hybrid.amd.mfma`` does)."""
import pytest
import triton
import triton.language as tl

import hybrid
from hybrid.port import compare
from hybrid.port.compare import as_hybrid
from hybrid.port.from_ttgir import load_port
from hybrid.port.whole_kernel import port_kernel

torch = pytest.importorskip("torch")


@triton.jit
def _skip_or_normalize(x_ptr, y_ptr, label_ptr, ignore, n, BLOCK: tl.constexpr):
    """A row is zeroed and left early where its label is ``ignore``; else divided by its max."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if tl.load(label_ptr + row) == ignore:
        tl.store(y_ptr + row * n + offs, 0.0, mask=offs < n)
        return
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf"))
    tl.store(y_ptr + row * n + offs, x / tl.max(x), mask=offs < n)


@triton.jit
def _gather_rows(x_ptr, idx_ptr, y_ptr, K: tl.constexpr, BLOCK: tl.constexpr):
    """Sums K rows picked by index, the loop counter widened to 64 bits in the index."""
    t = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for k in range(K):
        row = tl.load(idx_ptr + (t * K + k), mask=k < K, other=0).to(tl.int64)
        acc += tl.load(x_ptr + row * BLOCK + offs)
    tl.store(y_ptr + t * BLOCK + offs, acc)


@triton.jit
def _keyed_sum(a, b):
    same = (a & -65536) == (b & -65536)
    return tl.where(same, a + b - (a & -65536), b)


@triton.jit
def _keyed_running_sum(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """A running sum of the low 16 bits, restarted where the high 16 bits change."""
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 0, _keyed_sum))


def _ported(kernel, signature: dict, constexprs: dict, target: str, tmp_path):
    ported = port_kernel(kernel, signature, constexprs, target, path=tmp_path / "port.py", num_warps=4)
    return ported, load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")


def _same_results(kernel, candidate, grid, args, constexprs: dict, target: str) -> None:
    result = compare(kernel, candidate=candidate, grid=grid, args=args, kwargs=constexprs, interpret=True,
                     target=target, machine_code_report=False)
    assert result.ok and result.outputs, result.report()


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_an_early_return_is_written_as_one_and_builds_to_the_same_code(target, tmp_path):
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "label_ptr": "*i32", "ignore": "i32", "n": "i32"}
    built = hybrid.compile(as_hybrid(_skip_or_normalize), signature, {"BLOCK": 64}, target, num_warps=4)
    assert "cf.cond_br" in built.asm["ttgir"]   # the branch the port reads, not an scf.if
    ported, candidate = _ported(_skip_or_normalize, signature, {"BLOCK": 64}, target, tmp_path)
    assert "        return" in ported.source
    assert ported.machine["port"] == ported.machine["original"]
    x, label = torch.rand(3, 50) + 0.5, torch.tensor([7, -100, 2], dtype=torch.int32)
    _same_results(_skip_or_normalize, candidate, (3, ), (x, torch.full_like(x, 9.0), label, -100, 50),
                  {"BLOCK": 64}, target)


def test_a_loop_counter_used_as_a_tensor_runs_in_the_interpreter(tmp_path):
    signature = {"x_ptr": "*fp32", "idx_ptr": "*i32", "y_ptr": "*fp32"}
    ported, candidate = _ported(_gather_rows, signature, {"K": 3, "BLOCK": 32}, "sm90a", tmp_path)
    assert "gl.to_tensor(k)" in ported.source
    assert ported.machine["port"] == ported.machine["original"]
    x, idx = torch.rand(5, 32), torch.tensor([4, 0, 2, 1, 1, 3], dtype=torch.int32)
    _same_results(_gather_rows, candidate, (2, ), (x, idx, torch.zeros(2, 32)), {"K": 3, "BLOCK": 32}, "sm90a")


def test_a_scan_combine_function_gets_the_constants_hoisted_out_of_it(tmp_path):
    ported, candidate = _ported(_keyed_running_sum, {"x_ptr": "*i32", "y_ptr": "*i32"}, {"BLOCK": 128}, "sm90a",
                                tmp_path)
    assert ported.machine["port"] == ported.machine["original"]
    keys = torch.repeat_interleave(torch.arange(4, dtype=torch.int32), 32) << 16
    x = keys | torch.randint(0, 100, (128, ), dtype=torch.int32)
    _same_results(_keyed_running_sum, candidate, (1, ), (x, torch.zeros(128, dtype=torch.int32)), {"BLOCK": 128},
                  "sm90a")


@triton.jit
def _dot_f32(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tile = offs[:, None] * B + offs[None, :]
    tl.store(c_ptr + tile, tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile)))


def test_an_amd_f32_dot_at_tf32_is_written_at_that_precision_and_builds_to_the_same_code(tmp_path):
    signature, consts = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}, {"B": 32}
    ported, candidate = _ported(_dot_f32, signature, consts, "gfx942", tmp_path)
    assert 'hybrid.amd.mfma(' in ported.source and 'input_precision="tf32"' in ported.source
    assert "_xf32" in hybrid.compile(as_hybrid(candidate), signature, consts, "gfx942", num_warps=4).asm["amdgcn"]
    assert ported.machine["port"] == ported.machine["original"]
    a, b = torch.randn(32, 32), torch.randn(32, 32)
    _same_results(_dot_f32, candidate, (1, ), (a, b, torch.zeros(32, 32)), consts, "gfx942")
