"""GPU names are targets: ``H100`` is an sm90a everywhere a target is taken, and a name that fits
no target is never answered with a near name of another architecture."""
import pytest

import hybrid
from hybrid import cli
from hybrid.cli import main
from interop.entry import request
from interop.errors import RequestError
from interop.targets import TARGETS, canonical, resolve
from scheduler.planning import expand_targets

from .kernels import NUM_WARPS, cases

NAMES = [("H100", "sm90a"), ("h200", "sm90a"), ("H800", "sm90a"), ("nvidia-h100", "sm90a"),
         ("NVIDIA H100 80GB HBM3", "sm90a"), ("B200", "sm100a"), ("gb200", "sm100a"), ("A100", "sm80"),
         ("NVIDIA A100-SXM4-80GB", "sm80"), ("MI300X", "gfx942"), ("mi325x", "gfx942"),
         ("AMD Instinct MI300X", "gfx942"), ("MI350X", "gfx950"), ("amd-mi355x", "gfx950"),
         ("SM90A", "sm90a"), ("sm_100a", "sm100a"), ("GFX942", "gfx942")]


@pytest.mark.parametrize("name,target", NAMES)
def test_gpu_names_resolve_to_their_target(name, target):
    assert canonical(name) == target
    assert resolve(name) == TARGETS[target]
    assert request.check_target(name) == TARGETS[target]


@pytest.mark.parametrize("name,hint", [("sm90", "did you mean 'sm90a'"), ("sm100", "did you mean 'sm100a'"),
                                       ("MI300", "did you mean 'MI300X' (gfx942)")])
def test_close_names_are_suggested_with_their_architecture(name, hint):
    with pytest.raises(RequestError, match="unknown target") as info:
        request.check_target(name)
    assert hint in str(info.value)


@pytest.mark.parametrize("name,wrong", [("H1000", "sm100a"), ("gfx90a", "gfx950"), ("MI250X", "MI350X"),
                                        ("B300", "B200"), ("sm89", "sm90a"), ("A10", "A100")])
def test_no_suggestion_of_another_architecture(name, wrong):
    with pytest.raises(RequestError) as info:
        request.check_target(name)
    assert "did you mean" not in str(info.value) and wrong not in str(info.value).partition(";")[0]


def test_build_plans_take_gpu_names_as_their_targets():
    assert expand_targets("H100,MI300X,sm90a") == ["sm90a", "gfx942"]
    with pytest.raises(ValueError, match=r"unknown target\(s\) sm90 \(did you mean 'sm90a'\?\)"):
        expand_targets("A100,sm90")


def test_compile_and_interpreter_take_a_gpu_name():
    torch = pytest.importorskip("torch")
    kernel, signature, constexprs = cases("sm90a")["arange_load"]
    assert hybrid.compile(kernel, signature, constexprs, target="H100", num_warps=NUM_WARPS).target == "sm90a"
    kernel, _, constexprs = cases("gfx942")["arange_load"]   # 64-lane layouts: an sm target would refuse them
    x, y = torch.randn(256), torch.zeros(256)
    with hybrid.interpreting(target="MI300X"):
        kernel[(1,)](x, y, 200, num_warps=NUM_WARPS, **constexprs)
    assert torch.equal(y[:200], x[:200])


def test_cli_target_takes_a_gpu_name(capsys):
    with pytest.raises(SystemExit) as info:
        main(["build", "tests/kernels.py:k_arange_load", "--target", "H1000"])
    assert info.value.code == 2
    assert "unknown target(s) H1000" in capsys.readouterr().err


def test_port_commands_take_a_gpu_name():
    args = cli.parser().parse_args(["port", "status", "tests/port_kernels.py:centered_square", "--target", "MI355X"])
    cli.check_arguments(args)
    assert args.target == "gfx950"


def test_cli_help_names_only_known_targets():
    """``--help`` lists targets without importing Triton, so its names are written out: each one resolves."""
    import re
    names = re.findall(r"\b(?:sm\d+a?|gfx\d+|[A-Z]+\d+[A-Z]?)\b", cli.TARGET_HELP)
    assert len(names) >= 4 and all(canonical(name) for name in names)
