"""Work a compile does not do twice: a copy of the module is laid out or planned only where a
decision needs it, and is not laid out again once chosen; the JIT functions a kernel reaches are
parsed only where a call site lies outside its own file. (What each costs: ``bench/compile_time.py``.)"""
import pytest

from interop import caches
from interop.boundaries import planner
from interop.lowering import host_relayout


@pytest.fixture
def cold(monkeypatch):
    """Every compile in the test made, not served from a cache."""
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    caches.clear()


def test_the_host_is_laid_out_once_per_way_tried(cold, monkeypatch):
    """layernorm on gfx942 decides whether to hold its buffer loads by laying out a copy of the
    host each way (``host_relayout._holds``); the copy laid out as decided becomes the host's body,
    so no way is laid out twice (the host itself was laid out again as the chosen copy had been)."""
    import examples.layernorm as layernorm
    ways = []
    lay_out = host_relayout._lay_out

    def recording(module, context, target, callees, anchored, loads_held):
        ways.append((anchored, loads_held))
        return lay_out(module, context, target, callees, anchored, loads_held)

    monkeypatch.setattr(host_relayout, "_lay_out", recording)
    layernorm.build("gfx942")
    assert len(ways) > 1 and len(set(ways)) == len(ways), ways


def test_a_plan_without_a_handoff_copies_no_module(cold, monkeypatch):
    """The planner decides on the module itself and copies it (to run Triton's allocation on the
    plan) only for a plan that hands a tile off: memcpy's has none."""
    import examples.memcpy as memcpy
    copies = []
    copy_module = planner.copy_module
    monkeypatch.setattr(planner, "copy_module", lambda *args: copies.append(args) or copy_module(*args))
    fb = memcpy.build("gfx942")
    assert fb.boundaries and not any(b.handoff == "shared" for b in fb.boundaries)
    assert copies == []


def test_call_sites_in_the_kernels_file_need_no_other_function_parsed(cold, monkeypatch):
    """Every region of memcpy is called from the kernel's own file: its records are anchored there
    without reaching (parsing) the JIT functions the kernel calls."""
    import inspect

    import examples.memcpy as memcpy
    import scheduler.cache

    def reached(*roots):
        raise AssertionError("reached_functions was called")

    monkeypatch.setattr(scheduler.cache, "reached_functions", reached)
    fb = memcpy.build("gfx942")
    assert fb.regions and {r.call_site.file for r in fb.regions} == {inspect.getsourcefile(memcpy.copy_kernel.fn)}


def test_a_binarys_figures_start_each_tool_once(monkeypatch):
    """A port, its report and its tests read one cubin's instructions and registers several times;
    each tool runs once per binary (a process start each), and again after the caches are cleared."""
    import examples.memcpy as memcpy
    from interop.instrumentation import resources
    fb = memcpy.build("sm90a")
    started = []
    printed = resources._printed

    def counting(cubin, flags, tool):
        started.append((tool, flags))
        return printed(cubin, flags, tool)

    monkeypatch.setattr(resources, "_printed", counting)
    caches.clear()
    first = (resources.instructions(fb.asm), resources.registers_and_spills(fb.asm))
    again = (resources.instructions(fb.asm), resources.registers_and_spills(fb.asm))
    assert first == again and first[0] > 0 and len(started) == 2, started
    caches.clear()
    assert resources.instructions(fb.asm) == first[0] and len(started) == 3
