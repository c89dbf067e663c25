"""``hybrid.amd.buffer_load`` / ``buffer_store``: a Gluon access of a pointer tile, issued as the
AMD buffer op Triton's ``ConvertToBufferOps`` makes of the same access in Triton code, from the
same base and offsets, exactly where that pass proves it (judged on a copy of the stitched
kernel), and as the global access elsewhere; a plain access in upstream's compiler and the
interpreter; refused off AMD."""
import re

import pytest
import torch
import triton

import hybrid
from interop.errors import RegionError, TargetError
from interop.instrumentation.resources import instructions
from interop.targets import TARGETS
from interop.triton.frontend import GluonASTSource
from tests import buffer_access_kernels as k

pytestmark = pytest.mark.version

CONSTEXPRS = {"BLOCK": 1024}
_CONSTEXPR = {"BLOCK": "constexpr", "LANES": "constexpr"}
LINE = k.doubled.fn.__code__.co_firstlineno + 4   # hybrid.amd.buffer_load(...)
GLUON_LINE = k.gluon_kernel.fn.__code__.co_firstlineno + 4


def _accesses(ttgir: str) -> list[str]:
    """The kernel's memory accesses, values renamed in order of appearance (the two kernels'
    SSA names differ) and locations dropped."""
    names: dict[str, str] = {}
    found = []
    for line in ttgir.splitlines():
        if re.search(r"amdg\.buffer_(load|store)|= tt\.load|tt\.store ", line):
            line = re.sub(r"%[\w.#]+", lambda m: names.setdefault(m.group(0), f"%v{len(names)}"),
                          line.split(" loc(")[0].strip())
            found.append(line)
    return found


def _build(kernel, target: str):
    return hybrid.compile(hybrid.jit(kernel), k.SIGNATURE, CONSTEXPRS, target, num_warps=4)


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_a_gluon_functions_accesses_are_the_buffer_ops_triton_issues_for_the_same_code(target):
    mixed, triton_only = _build(k.row_kernel, target), _build(k.row_kernel_triton, target)
    accesses = _accesses(mixed.asm["ttgir"])
    assert [a.split()[2 if "=" in a else 0] for a in accesses] == ["amdg.buffer_load", "amdg.buffer_store"], accesses
    assert accesses == _accesses(triton_only.asm["ttgir"])
    assert "hybrid.buffer_store" not in mixed.asm["ttgir"]   # no flag is left
    assert instructions(mixed.asm) == instructions(triton_only.asm)
    assert "buffer_load_dword" in mixed.asm["amdgcn"] and "global_load" not in mixed.asm["amdgcn"]


@pytest.mark.parametrize("target", ["gfx942"])
def test_an_access_triton_cannot_prove_in_range_stays_the_global_access(target):
    mixed, triton_only = _build(k.flat_kernel, target), _build(k.flat_kernel_triton, target)
    accesses = _accesses(mixed.asm["ttgir"])
    assert not any("amdg." in a for a in accesses) and len(accesses) == 2, accesses
    assert accesses == _accesses(triton_only.asm["ttgir"])
    assert instructions(mixed.asm) == instructions(triton_only.asm)


def test_a_gluon_kernels_own_tile_is_accessed_with_buffer_ops_by_hybrid_and_globally_upstream():
    constexprs = {**CONSTEXPRS, "LANES": 64}
    built = hybrid.compile(hybrid.jit(k.gluon_kernel), k.SIGNATURE, constexprs, "gfx942", num_warps=4)
    assert [a.split()[2 if "=" in a else 0] for a in _accesses(built.asm["ttgir"])] == \
        ["amdg.buffer_load", "amdg.buffer_store"]
    upstream = triton.compile(GluonASTSource(k.gluon_kernel, {**k.SIGNATURE, **_CONSTEXPR}, constexprs),
                              target=TARGETS["gfx942"])
    assert [a.split()[2 if "=" in a else 0] for a in _accesses(upstream.asm["ttgir"])] == ["tt.load", "tt.store"]


def test_the_interpreter_runs_them_as_plain_accesses():
    x = torch.randn(3 * 1024)
    expected = x.clone()
    expected[:3 * 1024].view(3, 1024)[:, :1000] *= 2
    with hybrid.interpreting(target="gfx942"):
        hybrid.jit(k.row_kernel)[(3, )](x, 1000, **CONSTEXPRS, num_warps=4)
    assert torch.equal(x, expected)


def test_an_nvidia_target_refuses_them_at_the_call():
    with pytest.raises(RegionError) as caught:
        _build(k.row_kernel, "sm90a")
    message = str(caught.value)
    assert f"buffer_access_kernels.py:{LINE}" in message and "hybrid.amd.buffer_load" in message, message
    assert "region 'doubled'" in message and "AMD buffer ops, which sm90a does not have" in message
    with pytest.raises(TargetError, match=rf"buffer_access_kernels\.py:{GLUON_LINE}.*hybrid\.amd\.buffer_load"):
        with hybrid.interpreting(target="sm80"):
            hybrid.jit(k.gluon_kernel)[(1, )](torch.zeros(1024), 1000, **CONSTEXPRS, LANES=32, num_warps=4)
    with pytest.raises(triton.CompilationError, match=r"hybrid\.amd\.buffer_load is AMD buffer ops"):
        triton.compile(GluonASTSource(k.gluon_kernel, {**k.SIGNATURE, **_CONSTEXPR}, {**CONSTEXPRS, "LANES": 32}),
                       target=TARGETS["sm90a"])
