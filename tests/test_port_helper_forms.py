"""``hybrid.port.from_ttgir`` on helper forms real libraries use: a combine function on unsigned
keys (Triton's IR is signless, so a negative constant there is the function's unsigned mask), and
a helper taking only constexprs, one left to its default ``None``, returning a tuple of scalars.
Each ports into its Triton kernel at machine-code parity and computes what the function did."""
import pytest

import triton
import triton.language as tl

import hybrid
from hybrid.port import from_ttgir, with_region
from hybrid.port.compare import figures

BLOCK = 256


@triton.jit
def keyed_add(x, y):
    """Counts within runs of equal keys (the upper 16 bits): a new key restarts the count."""
    key: tl.constexpr = 0xFFFF0000
    kx = x & key
    return tl.where(kx == (y & key), x + y - kx, y)


@triton.jit
def run_lengths_kernel(keys_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    packed = (tl.load(keys_ptr + offs).to(tl.uint32) << 16) | 1
    runs = tl.associative_scan(packed, 0, keyed_add)
    tl.store(out_ptr + offs, ((runs - 1) & 0xFFFF).to(tl.int32))


@triton.jit
def grid_position(X: tl.constexpr, Y: tl.constexpr = None):
    """This program's 2D (or 3D) position in a 1D grid, x fastest."""
    pid = tl.program_id(0).to(tl.int64)
    if Y is None:
        return pid % X, pid // X
    else:
        return pid % X, (pid // X) % Y, pid // (X * Y)


@triton.jit
def positions_kernel(out_ptr, NT: tl.constexpr):
    i_n, i_t = grid_position(NT)
    tl.store(out_ptr + tl.program_id(0), (i_n * 1000 + i_t).to(tl.int32))


def _ported(kernel, fn, signature: dict, constexprs: dict, target: str, tmp_path):
    """(the port, its function loaded, the kernel's figures without and with it)."""
    ported = from_ttgir.port(kernel, fn, signature, constexprs, target, num_warps=4)
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    built = [hybrid.compile(k, signature, constexprs, target, num_warps=4)
             for k in (kernel, with_region(kernel, fn, candidate))]
    return ported, candidate, *map(figures, built)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["sm90a", "gfx950"])
def test_a_combine_function_masking_unsigned_keys_ports_at_parity_and_counts_the_same(target, tmp_path):
    torch = pytest.importorskip("torch")
    from hybrid.port import compare
    signature = {"keys_ptr": "*i32", "out_ptr": "*i32"}
    ported, candidate, before, after = _ported(run_lengths_kernel, keyed_add, signature, {"BLOCK": BLOCK}, target,
                                               tmp_path)
    assert after == before, (before, after)
    assert "gl.to_tensor(-65536)" in ported.source, ported.source   # cast to the keys' unsigned type, as in Triton
    keys = torch.sort(torch.randint(0, 9, (BLOCK, ), dtype=torch.int32)).values
    result = compare(run_lengths_kernel, region=keyed_add, candidate=candidate, grid=(1, ),
                     args=(keys, torch.zeros(BLOCK, dtype=torch.int32)), kwargs={"BLOCK": BLOCK, "num_warps": 4},
                     interpret=True, target=target, atol=0, rtol=0)
    assert result.ok, result.report()


@pytest.mark.parametrize("target", ["sm80", "gfx950"])
def test_a_helper_of_constexprs_with_a_default_left_out_ports_at_parity_and_refuses_other_values(target, tmp_path):
    """The call leaves ``Y`` to its default: the port declares it as the function does. Triton
    folded ``X`` (and ``Y``) into the IR, so the port asserts them: built for another ``NT`` it is
    refused by name, never a kernel dividing by the old ``X``."""
    torch = pytest.importorskip("torch")
    from hybrid.port import compare
    signature, constexprs = {"out_ptr": "*i32"}, {"NT": 7}
    ported, candidate, before, after = _ported(positions_kernel, grid_position, signature, constexprs, target,
                                               tmp_path)
    assert after == before, (before, after)
    assert "(X: gl.constexpr, Y: gl.constexpr = None):" in ported.source, ported.source
    result = compare(positions_kernel, region=grid_position, candidate=candidate, grid=(21, ),
                     args=(torch.zeros(21, dtype=torch.int32), ), kwargs={**constexprs, "num_warps": 4},
                     interpret=True, target=target, atol=0, rtol=0)
    assert result.ok, result.report()
    with pytest.raises(Exception) as other:
        hybrid.compile(with_region(positions_kernel, grid_position, candidate), signature, {"NT": 13},
                       target, num_warps=4)
    assert "was written for X == 7" in _chain(other.value)


def _chain(exc: BaseException) -> str:
    """An exception's message and its causes'."""
    text = ""
    while exc is not None:
        text, exc = text + f"{type(exc).__name__}: {exc}\n", exc.__cause__ or exc.__context__
    return text
