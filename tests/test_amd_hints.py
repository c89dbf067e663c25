"""``hybrid.amd.setprio`` / ``hybrid.amd.sched_barrier``: the ROCDL scheduling hints Triton's AMD
ping-pong pass writes, written from Gluon code. Built by upstream's compiler and by hybrid, they
are the ops and the instructions Triton's pass gives, at the call's line; the interpreter runs
them as nothing; NVIDIA targets refuse them at the call in all three."""
import re

import pytest
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid
from bench import parity_ports as pp
from interop.errors import TargetError
from interop.lowering.amd_hints import SCHED_CLASSES, classes_of
from interop.targets import TARGETS
from interop.triton import compat
from interop.triton.frontend import GluonASTSource

pytestmark = pytest.mark.version

SIGNATURE = {"x_ptr": "*fp32"}
MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}


@gluon.jit
def hinted(x_ptr, LANES: gl.constexpr):
    offs = gl.arange(0, 4 * LANES, layout=gl.BlockedLayout([1], [LANES], [4], [0]))
    x = gl.load(x_ptr + offs)
    hybrid.amd.setprio(1)
    hybrid.amd.sched_barrier()
    gl.store(x_ptr + offs, x + 1.0)
    hybrid.amd.sched_barrier("non_mem_non_sideeffect", "valu")
    hybrid.amd.setprio(0)


LINE = hinted.fn.__code__.co_firstlineno + 4   # hybrid.amd.setprio(1)


def _hints(ttgir: str) -> list[str]:
    return re.findall(r"rocdl\.(?:s\.setprio|sched\.barrier) [\w|]+", ttgir)


def _expected_hints() -> list[str]:
    masks = [compat.sched_barrier_mask(0, ()), compat.sched_barrier_mask(0x3, ("non_mem_non_sideeffect", "valu"))]
    return ["rocdl.s.setprio 1", f"rocdl.sched.barrier {masks[0]}", f"rocdl.sched.barrier {masks[1]}",
            "rocdl.s.setprio 0"]


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_the_hints_are_the_rocdl_ops_and_instructions_in_place(target):
    built = hybrid.compile(hybrid.jit(hinted), SIGNATURE, {"LANES": 64}, target, num_warps=4)
    assert _hints(built.asm["ttgir"]) == _expected_hints()
    amdgcn = built.asm["amdgcn"]
    assert re.findall(r"s_setprio \d|sched_barrier mask\(0x[0-9a-f]+\)", amdgcn) == [
        "s_setprio 1", "sched_barrier mask(0x00000000)", "sched_barrier mask(0x00000003)", "s_setprio 0"]
    # in program order: the priority rises after the load is issued and falls after the store
    assert amdgcn.index("s_setprio 1") < amdgcn.index("global_store") < amdgcn.index("s_setprio 0")
    located = re.search(r"rocdl\.s\.setprio 1 loc\((#loc\d+)\)", built.asm["ttgir"]).group(1)
    assert re.search(rf'^{located} = loc\("[^"]*test_amd_hints\.py":{LINE}:', built.asm["ttgir"], re.M)


def test_upstreams_compiler_builds_the_same_ops():
    upstream = triton.compile(GluonASTSource(hinted, {**SIGNATURE, "LANES": "constexpr"}, {"LANES": 64}),
                              target=TARGETS["gfx942"])
    assert _hints(upstream.asm["ttgir"]) == _expected_hints()
    assert "s_setprio 1" in upstream.asm["amdgcn"]


def test_an_nvidia_target_refuses_them_at_the_call():
    with pytest.raises(TargetError) as caught:
        hybrid.compile(hybrid.jit(hinted), SIGNATURE, {"LANES": 32}, "sm90a", num_warps=4)
    message = str(caught.value)
    assert f"test_amd_hints.py:{LINE}" in message and "hybrid.amd.setprio" in message and "gfx942" in message
    with pytest.raises(triton.CompilationError, match=r"hybrid\.amd\.setprio is an AMD scheduling hint"):
        triton.compile(GluonASTSource(hinted, {**SIGNATURE, "LANES": "constexpr"}, {"LANES": 32}),
                       target=TARGETS["sm90a"])


def test_the_interpreter_runs_them_as_nothing_and_refuses_them_as_the_compiler_does():
    x = torch.arange(256, dtype=torch.float32)
    with hybrid.interpreting(target="gfx942"):
        hybrid.jit(hinted)[(1, )](x, LANES=64, num_warps=4)
    assert torch.equal(x, torch.arange(256, dtype=torch.float32) + 1)
    with pytest.raises(TargetError, match=rf"test_amd_hints\.py:{LINE}.*hybrid\.amd\.setprio"):
        with hybrid.interpreting(target="sm90a"):
            hybrid.jit(hinted)[(1, )](torch.zeros(128), LANES=32, num_warps=4)


@gluon.jit
def _bad_priority(x_ptr):
    hybrid.amd.setprio(4)


@gluon.jit
def _bad_class(x_ptr):
    hybrid.amd.sched_barrier("vmem")


@pytest.mark.parametrize("kernel, says", [(_bad_priority, "priority from 0 to 3"),
                                          (_bad_class, "unknown instruction class 'vmem'; the classes are")])
def test_a_bad_argument_says_what_is_accepted(kernel, says):
    with pytest.raises(Exception, match=says):
        hybrid.compile(hybrid.jit(kernel), SIGNATURE, {}, "gfx942", num_warps=4)


def test_a_mask_reads_back_as_the_classes_it_allows():
    assert classes_of("none") == () and classes_of("0") == ()
    assert classes_of("valu|salu") == ("valu", "salu") == classes_of(str(0x6))
    assert set(classes_of(str(sum(SCHED_CLASSES.values())))) == set(SCHED_CLASSES)


@pytest.mark.skipif(not hasattr(gl.amd, "AMDMFMALayout"), reason="this Triton's Gluon has no MFMA layout")
def test_the_pingpong_mainloop_port_computes_what_the_triton_function_did(tmp_path):
    """gfx942's pipelined mainloop, which Triton's ping-pong pass schedules with priorities and
    barriers: its port (which writes them) in the kernel, against the kernel, in the interpreter."""
    from hybrid.port import compare, from_ttgir
    target, constexprs = "gfx942", pp.matmul_act_gluon_host_constexprs("gfx942")
    ported = from_ttgir.port(pp.matmul_act_gluon_host, pp.mainloop, MATMUL, constexprs, target,
                             num_warps=pp.NUM_WARPS, divisible=("K", ))
    if compat.PINGPONG_IN_REGIONS:   # (3.6: regions are lowered without the ping-pong pass)
        assert "hybrid.amd.setprio(1)" in ported.source and "hybrid.amd.sched_barrier()" in ported.source
    candidate = from_ttgir.load_port(ported.source, ported.name, tmp_path / f"{ported.name}.py")
    M = N = 128
    K = 128
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    result = compare(pp.matmul_act_gluon_host, region=pp.mainloop, candidate=candidate, grid=(1, 1),
                     args=(a, b, torch.zeros(M, N).half(), K), kwargs={"num_warps": pp.NUM_WARPS, **constexprs},
                     interpret=True, target=target, atol=1e-2, rtol=1e-2)
    assert result.ok, result.report()
    assert result.machine["original"] == result.machine["candidate"], result.machine


def test_a_region_the_pingpong_pass_schedules_builds_on_every_triton():
    """gfx942's block ping-pong pass writes ROCDL ops into the matmul mainloop a Gluon host calls
    as a Triton region. Triton 3.6's inliner moves no ROCDL op, and the kernel failed to stitch
    there; its regions are now lowered without that pass (``compat.without_block_pingpong``).
    Every release builds it within 2% of all-Triton's instructions."""
    from examples.layouts import compile_pure
    from hybrid.attribution import kernel_instructions
    fb = hybrid.compile(pp.matmul_act_gluon_host, MATMUL, pp.matmul_act_gluon_host_constexprs("gfx942"),
                        target="gfx942", num_warps=pp.NUM_WARPS, divisible=("K", ))
    plain = compile_pure(pp.matmul_act_triton, MATMUL, pp.MATMUL_TILES, "gfx942", pp.NUM_WARPS, divisible=("K", ))
    assert fb.kernel_entries == 1
    ratio = kernel_instructions(fb.assembly, fb.name) / kernel_instructions(plain.asm["amdgcn"], plain.metadata.name)
    assert ratio <= 1.02, ratio
