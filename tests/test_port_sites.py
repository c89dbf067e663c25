"""A function its kernel calls at sites Triton lowers differently (other constexprs, other tile
shapes) is ported per specialization, each site calling its own port; one port written for the
first site cannot reach the second; sites Gluon cannot tell apart are refused, each named
(tests/multisite_port_kernels.py)."""
import re
import types

import pytest
import torch

import hybrid
from hybrid.port import PortError, compare, from_ttgir, with_region
from tests import multisite_port_kernels as m
from tests.port_kernels import run_generated_test

pytestmark = pytest.mark.slow

KERNELS = "tests/multisite_port_kernels.py"


def _loaded(ported, name: str, tmp_path):
    return from_ttgir.load_port(ported.source, name, tmp_path / f"{ported.name}.py")


def _chain(exc: BaseException | None) -> str:
    """The messages of ``exc`` and of the exceptions it was raised from (a Gluon kernel's compile
    error names the host's line, and the port's static assert under it)."""
    return "" if exc is None else f"{exc}\n{_chain(exc.__cause__ or exc.__context__)}"


def _compare(kernel, fn, candidate, args: tuple, constexprs: dict, target: str):
    return compare(kernel, region=fn, candidate=candidate, grid=(1, ), args=args,
                   kwargs={**constexprs, "num_warps": 4}, interpret=True, target=target, machine_code_report=False)


@pytest.mark.parametrize("kernel, target, lines", [
    ("k_two_phase", "sm80", (40, 43)), ("k_two_phase", "gfx942", (40, 43)), ("k_two_phase_gluon", "sm90a", (53, 56))])
def test_a_helper_called_with_two_constexpr_specializations_is_ported_per_site(kernel, target, lines, tmp_path):
    """Upstream's attention backward pattern: MASK=True on 16-row tiles, then MASK=False on 32-row
    tiles. Each site gets the port of its own IR, picked by BLOCK_M; the kernel with it computes both
    sites' sums (one output each) as the Triton function does. The first site's port alone, as
    written before, is a compile error at the second site naming the value it was written for;
    without its guards it computes another sum there (these inputs tell the ports apart)."""
    kernel = getattr(m, kernel)   # a Triton kernel (the function through a probe region), or a Gluon one
    ported = from_ttgir.port(kernel, m.accumulate_rows, m.SIGNATURE, m.CONSTEXPRS, target, num_warps=4)
    name, source = ported.name, ported.source
    assert [site.split(" (")[0] for site in ported.sites] == [f"{KERNELS}:{line}" for line in lines]
    assert "MASK=True" in ported.sites[0] and "BLOCK_M=16" in ported.sites[0] and ported.sites[0].endswith(f"{name}_0")
    assert "MASK=False" in ported.sites[1] and "BLOCK_M=32" in ported.sites[1] and ported.sites[1].endswith(f"{name}_1")
    assert f"    if (BLOCK_M == 16):\n        return {name}_0(" in source
    assert f"    elif (BLOCK_M == 32):\n        return {name}_1(" in source
    assert "gl.static_assert(MASK == True" in source and "gl.static_assert(MASK == False" in source
    assert "gl.arange(0, 16," in source and "gl.arange(0, 32," in source   # each site's own tile

    p = m.problem(*m.CHECK_SIZE)
    args = (p["x"], p["y1"], p["y2"])
    result = _compare(kernel, m.accumulate_rows, _loaded(ported, name, tmp_path), args, m.CONSTEXPRS, target)
    assert result.ok and [o.name for o in result.outputs] == ["y1_ptr", "y2_ptr"], result.report()
    assert result.site_runs == {f"{name}_0": 1, f"{name}_1": 1}   # each site ran its own port

    first_only = _loaded(ported, f"{name}_0", tmp_path)   # what was swapped into both sites before
    with pytest.raises(Exception) as refused:
        hybrid.compile(with_region(kernel, m.accumulate_rows, first_only), m.SIGNATURE, m.CONSTEXPRS, target,
                       num_warps=4)
    assert f"{name}_0 was written for start == 0" in _chain(refused.value)
    unguarded = re.sub(r"\n    gl\.static_assert\([^\n]*", "", source)
    old = from_ttgir.load_port(unguarded, f"{name}_0", tmp_path / f"{name}_unguarded.py")
    wrong = _compare(kernel, m.accumulate_rows, old, args, m.CONSTEXPRS, target)
    assert [o.ok for o in wrong.outputs] == [True, False], wrong.report()


def test_a_helper_called_on_two_tile_shapes_is_ported_per_site(tmp_path):
    """No constexpr at all: the sites differ in the tile's shape, which picks the port."""
    ported = from_ttgir.port(m.k_two_shapes, m.scale_by_row_sums, m.SIGNATURE, {"N": 32}, "sm90a", num_warps=4)
    name = ported.name
    assert [site.split(" (")[0] for site in ported.sites] == [f"{KERNELS}:73", f"{KERNELS}:74"]
    assert "x: tensor<16x32xf32" in ported.sites[0] and "x: tensor<32x32xf32" in ported.sites[1]
    assert f"    if (x.shape[0] == 16):\n        return {name}_0(x)" in ported.source
    assert f"    elif (x.shape[0] == 32):\n        return {name}_1(x)" in ported.source
    args = (torch.randn(32, 32), torch.full((16, 32), float("nan")), torch.full((32, 32), float("nan")))
    result = _compare(m.k_two_shapes, m.scale_by_row_sums, _loaded(ported, name, tmp_path), args, {"N": 32}, "sm90a")
    assert result.ok and [o.name for o in result.outputs] == ["y1_ptr", "y2_ptr"], result.report()


def test_sites_gluon_cannot_tell_apart_are_refused_each_named():
    """The two sites differ only in a dtype constexpr (folded into the IR, no literal to test):
    refused, naming both calls and what each passes."""
    with pytest.raises(PortError) as info:
        from_ttgir.port(m.k_two_roundings, m.rounded, m.SIGNATURE, {"N": 64}, "sm80", num_warps=4)
    message = str(info.value)
    assert message.startswith(f"rounded ({KERNELS}:95) is called at 2 sites that Triton lowers in 2 different ways")
    assert f"{KERNELS}:104 (DT=" in message and f"{KERNELS}:105 (DT=" in message
    assert "DT=triton.language.float16" in message and "DT=triton.language.bfloat16" in message
    assert "Nothing was written" in message


def test_port_start_writes_a_port_per_site_and_its_test_runs_both(tmp_path, capsys):
    """``hybrid port start`` end to end: the port module with a port per specialization, the
    command's line per call site, the generated test run in the interpreter."""
    from hybrid import cli
    assert cli.main(["port", "start", f"{KERNELS}:accumulate_rows", "--target", "sm80", "--kernel", "k_two_phase",
                     "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"call site {KERNELS}:40 (" in out and "accumulate_rows_gluon_sm80_0" in out
    assert f"call site {KERNELS}:43 (" in out and "accumulate_rows_gluon_sm80_1" in out
    assert "from the IR Triton's passes produced for its call" in out
    files = types.SimpleNamespace(port=tmp_path / "accumulate_rows_gluon_sm80.py",
                                  test=tmp_path / "test_port_accumulate_rows_sm80.py")
    run_generated_test(files, "test_accumulate_rows_gluon_sm80_matches_accumulate_rows")


def test_attentions_kv_loop_under_a_causal_mask_is_ported_per_site_through_its_caller(tmp_path):
    """The examples' attention with CAUSAL=True: its kernel calls ``attention_loop``, which calls
    ``kv_loop`` twice (unmasked blocks, then the diagonal ones masked). Both calls are found
    through the function between, each gets its port, and the kernel with them computes the
    output the kernel without them does (interpreter)."""
    from examples import attention
    target, constexprs = "sm90a", attention.constexprs("sm90a", 64, True)
    options = attention.options(target)
    ported = from_ttgir.port(attention.attention_kernel, attention.kv_loop, attention.SIGNATURE, constexprs, target,
                             divisible=attention.DIVISIBLE, **options)
    assert [site.split(" (")[0] for site in ported.sites] == ["examples/attention.py:96", "examples/attention.py:98"]
    assert "    if (MASK == False):" in ported.source and "    elif (MASK == True):" in ported.source
    # at the kernel's machine code: the second port takes acc, m_i and l_i in the layouts the first
    # returns them in, where they were converted through shared memory and back (2552 against 1930)
    port, original = ported.machine["port"], ported.machine["original"]
    assert port["instructions"] <= 1.02 * original["instructions"], ported.machine
    assert port["shared_bytes"] <= original["shared_bytes"], ported.machine
    p = attention.problem(1, 1, 256, 64, True, device="cpu")
    candidate = _loaded(ported, ported.name, tmp_path)
    result = compare(attention.attention_kernel, region=attention.kv_loop, candidate=candidate, grid=(2, 1),
                     args=(p["q"], p["k"], p["v"], p["o"], p["sm_scale"], 256),
                     kwargs={**constexprs, **options}, interpret=True, target=target, machine_code_report=False,
                     atol=1e-2, rtol=1e-2)
    assert result.ok, result.report()


def test_the_comparison_fails_where_a_sites_port_never_ran(tmp_path):
    """A site the inputs do not reach compares nothing: the comparison says so and is not ok."""
    signature = {**m.SIGNATURE, "whole": "i32"}
    ported = from_ttgir.port(m.k_two_shapes_maybe, m.scale_by_row_sums, signature, {"N": 32}, "sm80", num_warps=4)
    candidate = _loaded(ported, ported.name, tmp_path)
    for whole, runs in ((1, 1), (0, 0)):
        args = (torch.randn(32, 32), torch.full((16, 32), float("nan")), torch.full((32, 32), float("nan")), whole)
        result = _compare(m.k_two_shapes_maybe, m.scale_by_row_sums, candidate, args, {"N": 32}, "sm80")
        assert result.site_runs == {f"{ported.name}_0": 1, f"{ported.name}_1": runs}
        assert result.ok == bool(runs), result.report()
    assert f"{ported.name}_1: NEVER RAN: its call site was not compared" in result.report()


def test_the_kernels_copy_is_read_at_each_site_of_a_call_in_an_inlined_function():
    """``kv_loop``'s two calls are in ``attention_loop``, which the kernel inlines: each site's ops
    are read from the kernel as the function's. At the first, the kernel passes constants for
    ``acc``, ``m_i`` and ``l_i`` (zeros, -inf, ones), and merged the zeros with the function's own
    of a ``tl.dot``: the copy takes the three as its parameters, never as those constants; at the
    second, ``m_i`` is a result the kernel leaves unused, returned as the loop makes it."""
    from examples import attention
    from hybrid.port import inlined
    from hybrid.port.from_ttgir import capture
    from hybrid.port.sites import arguments
    from hybrid.port.ttgir_text import parse
    from interop.lowering.lower_triton import REGION_FUNCTION
    target = "sm90a"
    captured = capture(attention.attention_kernel, attention.kv_loop, attention.SIGNATURE,
                       attention.constexprs(target, 64, True), target, divisible=attention.DIVISIBLE,
                       **attention.options(target))
    kernel = captured.original.asm["ttgir"]
    for site in captured.sites:
        copy = inlined.read(kernel, "attention_kernel", site.call.text, site.at)
        names = dict(zip((ssa for ssa, _ in parse(site.call.text, REGION_FUNCTION).args), arguments(site.call)))
        taken = {names[argument] for argument in copy.arguments.values()}
        assert {"acc", "m_i", "l_i", "q", "k_ptrs", "v_ptrs", "qk_scale", "hi"} <= taken, (site.where, taken)
        assert len(copy.results) == 3


def test_the_kernels_copy_is_read_where_one_value_is_two_parameters_and_a_load_is_shared(tmp_path):
    """Upstream attention backward's ``_attn_bwd_dkdv`` in small (``dot_rows``): the first site
    passes ``start`` for both ``start_n`` and ``start_m``, the second ``start + 64``, whose
    pipelined prologue the kernel makes from ``start`` (``start_m + 32`` as ``start + 96``); both
    take the ``w`` the kernel loaded and staged once, and load the same ``d``, which the kernel
    loads once. Each site's copy is read, every scalar parameter taken as itself, and the port
    computes the kernel's result at the kernel's machine code."""
    from hybrid.port import inlined
    from hybrid.port.from_ttgir import capture
    from hybrid.port.sites import arguments
    from hybrid.port.ttgir_text import parse
    from interop.lowering.lower_triton import REGION_FUNCTION
    signature = {"x_ptr": "*fp16", "d_ptr": "*fp16", "w_ptr": "*fp16", "y_ptr": "*fp32", "num_steps": "i32"}
    constexprs = {"BLOCK_N": 64, "MASK_BLOCK": 16, "BLOCK_M": 32}
    captured = capture(m.k_one_start_for_two, m.dot_rows, signature, constexprs, "sm80", num_warps=4)
    kernel = captured.original.asm["ttgir"]
    assert len(captured.sites) == 2
    for site in captured.sites:
        copy = inlined.read(kernel, "k_one_start_for_two", site.call.text, site.at)
        names = dict(zip((ssa for ssa, _ in parse(site.call.text, REGION_FUNCTION).args), arguments(site.call)))
        taken = [names[argument] for argument in copy.arguments.values()]
        assert {"start_n", "start_m", "w", "x_ptr", "d_ptr"} <= set(taken), (site.where, taken)
        assert taken.count("start_n") == taken.count("start_m") == 1, (site.where, copy.arguments)

    ported = from_ttgir.port(m.k_one_start_for_two, m.dot_rows, signature, constexprs, "sm80", num_warps=4)
    machine = ported.machine
    assert machine["port"]["instructions"] <= 1.02 * machine["original"]["instructions"], machine
    assert machine["port"]["shared_bytes"] <= machine["original"]["shared_bytes"], machine
    n, rows = constexprs["BLOCK_N"], torch.Generator().manual_seed(0)   # small integers: every sum exact in f16
    x = torch.randint(-2, 3, (2 * n + 2 * constexprs["BLOCK_M"], n), generator=rows).half()
    d, w = torch.randint(1, 3, (3 * n, ), generator=rows).half(), torch.randint(-1, 2, (2 * n, n), generator=rows).half()
    y = torch.full((2 * n, n), float("nan"))
    result = compare(m.k_one_start_for_two, region=m.dot_rows, candidate=_loaded(ported, ported.name, tmp_path),
                     grid=(2, ), args=(x, d, w, y, n // constexprs["MASK_BLOCK"]), kwargs={**constexprs, "num_warps": 4}, interpret=True,
                     target="sm80", machine_code_report=False)
    assert result.ok, result.report()
    assert result.site_runs == {f"{ported.name}_0": 2, f"{ported.name}_1": 2}


def test_a_helper_called_on_a_row_and_on_a_tile_is_picked_by_rank(tmp_path):
    """fla's ``exp2`` pattern: the sites differ in rank, which picks the port, not in a layout (a
    build for other operand layouts, the probe's, matched no site's: the port did not build)."""
    ported = from_ttgir.port(m.k_two_ranks, m.exp2_f32, m.SIGNATURE, {"N": 16}, "sm80", num_warps=4)
    name = ported.name
    assert f"    if (len(x.shape) == 1):\n        return {name}_0(x)" in ported.source
    assert f"    elif (len(x.shape) == 2):\n        return {name}_1(x)" in ported.source
    args = (torch.randn(16), torch.full((16, ), float("nan")), torch.full((16, 16), float("nan")))
    result = _compare(m.k_two_ranks, m.exp2_f32, _loaded(ported, name, tmp_path), args, {"N": 16}, "sm80")
    assert result.ok and [o.name for o in result.outputs] == ["y1_ptr", "y2_ptr"], result.report()
    assert result.site_runs == {f"{name}_0": 1, f"{name}_1": 1}


def test_a_tile_the_kernel_computes_from_a_loaded_row_is_computed_in_its_ports_layout():
    """The tile site takes (``g[:, None] - g[None, :]`` of a loaded row) is one the kernel computes
    in the layout of its store; the port of that site takes it so, and the host computes it there
    as the kernel does, its row loaded again in each slice of it (``access_layouts``), where it
    converted it at the call: the kernel with the port is the kernel's machine code."""
    ported = from_ttgir.port(m.k_two_ranks, m.exp2_f32, m.SIGNATURE, {"N": 16}, "sm90a", num_warps=4)
    assert ported.machine["port"] == ported.machine["original"], ported.machine


def test_a_helper_called_in_two_layouts_by_a_gluon_host_is_ported_per_site(tmp_path):
    """Same shape, no constexpr: the Gluon host hands the tile over in a row-major layout at one
    site and a column-major one at the other, so Triton lowers the function in each; each site's
    port is picked by the layout, and both run in the interpreter."""
    ported = from_ttgir.port(m.k_two_layouts, m.scale_by_row_sums, m.SIGNATURE, {"N": 32}, "sm90a", num_warps=4)
    name = ported.name
    assert len(ported.sites) == 2 and ".type.layout ==" in ported.source
    args = (torch.randn(32, 32), torch.full((32, 32), float("nan")), torch.full((32, 32), float("nan")))
    result = _compare(m.k_two_layouts, m.scale_by_row_sums, _loaded(ported, name, tmp_path), args, {"N": 32}, "sm90a")
    assert result.ok and [o.name for o in result.outputs] == ["y1_ptr", "y2_ptr"], result.report()
    assert result.site_runs == {f"{name}_0": 1, f"{name}_1": 1}
