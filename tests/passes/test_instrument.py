"""Proton scopes placed after stitching (``instrumentation/instrument.bracket``): the kernel scope
around the kernel's whole body, before each of its returns, and a scope around each pipelined loop
timed whole (shrunk from ``tests/triton_hosts.py``'s ``h_pipelined_loop`` on sm90a)."""
from dataclasses import dataclass

import pytest

from interop.instrumentation import instrument
from interop.stitching import stitch
from tests.passes.modules import LANES, blocked, module_text, ops, parsed


@dataclass
class Timed:
    """What a loop scope's name reads of a ``Region``."""
    index: int
    function: str


def kernel(target: str) -> str:
    """A loop summing rows (its body: region 2's code, say), an early return, and the last one."""
    return module_text(target, {"row": blocked([4], [LANES[target]], [4], [0])}, '''  tt.func public @k(%x: tensor<1024x!tt.ptr<f32>, #row>, %y: tensor<1024x!tt.ptr<f32>, #row>, %n: i32, %stop: i1) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<1024xf32, #row>
    %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<1024xf32, #row>) : i32 {
      %0 = tt.load %x : tensor<1024x!tt.ptr<f32>, #row>
      %1 = arith.addf %acc, %0 : tensor<1024xf32, #row>
      scf.yield %1 : tensor<1024xf32, #row>
    }
    cf.cond_br %stop, ^early, ^last
  ^early:
    tt.return
  ^last:
    tt.store %y, %sum : tensor<1024x!tt.ptr<f32>, #row>
    tt.return
  }
''')


def bracketed(target: str, timed: bool):
    module, context, builder = parsed(kernel(target), target)
    instrument.load_dialect(context)
    loops = {ops(module, "scf.for")[0].get_region(0).id(): [Timed(2, "g_sum")]} if timed else {}
    instrument.bracket(module, builder, loops)
    stitch.verify(module, "the test's scopes")
    return [line.strip() for line in module.str_nodebug().splitlines()]


def _records(lines: list[str]) -> list[str]:
    return [line for line in lines if "proton.record" in line]


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_kernel_scope_opens_the_body_and_closes_before_every_return(target):
    lines = bracketed(target, timed=False)
    assert _records(lines) == ['proton.record start "kernel"'] + ['proton.record end "kernel"'] * 2
    body = lines[next(k for k, line in enumerate(lines) if line.startswith("tt.func public")) + 1:]
    assert body[0] == 'proton.record start "kernel"'
    for k, line in enumerate(body):
        if line == "tt.return":
            assert body[k - 1] == 'proton.record end "kernel"'


def test_a_pipelined_loop_timed_whole_gets_its_own_scope_around_it():
    lines = bracketed("sm90a", timed=True)
    assert _records(lines)[:3] == ['proton.record start "kernel"', 'proton.record start "loop0[r2]"',
                                   'proton.record end "loop0[r2]"']
    start, end = lines.index('proton.record start "loop0[r2]"'), lines.index('proton.record end "loop0[r2]"')
    assert "scf.for" in lines[start + 1] and lines[end - 1] == "}"
