"""The interpreter computes bf16, fp16 and fp8 as the GPU does (fp32 arithmetic, round to nearest
even, fp8 saturating), and refuses an fp8 type where the compiler refuses it."""
import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from hybrid import interpret  # noqa: E402
from hybrid.interpret import InterpretError  # noqa: E402
from interop.triton.frontend import CompilationError  # noqa: E402

N = 1024
TL = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float8_e4m3fn: tl.float8e4nv,
      torch.float8_e5m2: tl.float8e5, torch.float32: tl.float32}


@hybrid.jit
@triton.jit
def unary(x, y, n, OP: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    if OP == "add1":
        r = v + 1
    elif OP == "square":
        r = v * v
    elif OP == "neg":
        r = -v
    elif OP == "div":
        r = v / 3
    else:
        r = v.to(DT)
    tl.store(y + offs, r, mask=mask)


@hybrid.jit
@triton.jit
def row_sum(x, y, BLOCK: tl.constexpr):
    tl.store(y, tl.sum(tl.load(x + tl.arange(0, BLOCK)), axis=0))


def _run(op, x, out_dtype, target="sm90a"):
    y = torch.zeros(x.numel(), dtype=out_dtype)
    interpret.launch(unary, (1, ), x, y, x.numel(), OP=op, DT=TL[out_dtype], BLOCK=triton.next_power_of_2(x.numel()),
                     target=target)
    return y


def _inputs(dtype=torch.float32):
    torch.manual_seed(0)
    return (torch.randn(N) * 7).to(dtype)


@pytest.mark.parametrize("op, reference", [("add1", lambda x: x + 1), ("square", lambda x: x * x),
                                           ("neg", lambda x: -x), ("div", lambda x: x / 3)])
def test_bf16_arithmetic_is_fp32_rounded_to_nearest_even(op, reference):
    x = _inputs(torch.bfloat16)
    assert torch.equal(_run(op, x, torch.bfloat16), reference(x))   # torch's CPU bf16: fp32, then RTNE


def test_fp32_to_bf16_and_fp16_round_to_nearest_even_not_truncate():
    # halfway between two bf16 values (ties go to the even mantissa), above halfway, and random values
    ties = torch.tensor([1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -(1 + 3 * 2 ** -8), 1 + 2 ** -11 + 2 ** -12])
    x = torch.cat([ties, _inputs()])
    for dtype in (torch.bfloat16, torch.float16):
        got = _run("cast", x, dtype)
        assert torch.equal(got, x.to(dtype)), dtype
    assert _run("cast", ties[:1], torch.bfloat16).item() == 1 + 2 ** -6   # truncation would give 1 + 2**-7


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_casts_round_to_nearest_even_and_saturate(dtype):
    largest = torch.finfo(dtype).max
    x = torch.cat([_inputs() * 10, torch.tensor([largest * 4, -largest * 4, float("nan")])])
    got = _run("cast", x, dtype)
    expected = x.clamp(-largest, largest).to(dtype)   # the GPU's cvt.rn.satfinite
    assert torch.equal(got[:-1].float(), expected[:-1].float())
    assert got[-1].float().isnan()
    back = _run("cast", got, torch.float32)   # fp8 -> fp32 is exact
    assert torch.equal(back[:-1], got[:-1].float())


def test_bf16_sum_adds_values_not_bits():
    """Each step of the reduction is a bf16 add (fp32, rounded), as the compiled combine is; the
    interpreter reduces in order, so its reference is the sequential bf16 sum."""
    x = _inputs(torch.bfloat16)
    y = torch.zeros(1, dtype=torch.bfloat16)
    interpret.launch(row_sum, (1, ), x, y, BLOCK=N, target="sm90a")
    expected = x[0]
    for value in x[1:]:
        expected = expected + value
    assert torch.equal(y[0], expected)


def test_fp8e4nv_refused_on_sm80_by_the_interpreter_as_by_the_compiler():
    with pytest.raises(InterpretError) as interpreted:
        interpret.launch(unary, (1, ), _inputs(), torch.zeros(N), N, OP="cast", DT=tl.float8e4nv, BLOCK=N, target="sm80")
    with pytest.raises(CompilationError) as compiled:
        hybrid.compile(unary, {"x": "*fp32", "y": "*fp32", "n": "i32"},
                       {"OP": "cast", "DT": tl.float8e4nv, "BLOCK": N}, target="sm80")
    phrase = "type fp8e4nv not supported in this architecture"
    assert phrase in str(interpreted.value) and phrase in str(compiled.value)
    _run("cast", _inputs(), torch.float8_e4m3fn, target="sm90a")   # and accepted where the compiler has it


@pytest.mark.parametrize("kernel, launch, signature", [
    (unary, dict(OP="square", DT=tl.float32, BLOCK=N), {"x": "*fp8e4nv", "y": "*fp8e4nv", "n": "i32"}),
    (row_sum, dict(BLOCK=1), {"x": "*fp8e4nv", "y": "*fp8e4nv"}),   # no two elements meet, the add is still there
])
def test_arithmetic_on_fp8_values_is_refused_by_both(kernel, launch, signature):
    from interop.errors import TargetError
    x = _inputs().to(torch.float8_e4m3fn)
    args = (x, torch.zeros_like(x), N) if kernel is unary else (x, torch.zeros_like(x))
    with pytest.raises(TargetError, match="arithmetic on fp8 values"):
        interpret.launch(kernel, (1, ), *args, **launch, target="sm90a")
    with pytest.raises(TargetError, match="arithmetic on fp8 values"):
        hybrid.compile(kernel, signature, {k: v for k, v in launch.items()}, target="sm90a")


@hybrid.jit
@triton.jit
def high_halves(a, b, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.umulhi(tl.load(a + offs), tl.load(b + offs)))


@pytest.mark.parametrize("dtype, bits", [(torch.int32, 32), (torch.int64, 64)])
def test_umulhi_multiplies_signed_tiles_as_unsigned_integers(dtype, bits):
    """``tt.mulhiui`` takes a signed tile's bits as an unsigned integer (Philox's rounds on
    ``int32`` tiles, as a port writes them): the high half of the unsigned product, checked
    against Python's integers."""
    info = torch.iinfo(dtype)
    a = torch.tensor([-766435501, -1, 3, info.min, info.max, 123456789, -2, 7], dtype=dtype)
    b = torch.tensor([1, -1, -5, 2, info.max, -987654321, -2, 0], dtype=dtype)
    out = torch.zeros_like(a)
    with hybrid.interpreting(target="sm80"):
        high_halves[(1, )](a, b, out, BLOCK=8)
    unsigned = [(x % 2**bits, y % 2**bits) for x, y in zip(a.tolist(), b.tolist())]
    expected = [(x * y) >> bits for x, y in unsigned]
    assert [v % 2**bits for v in out.tolist()] == expected
