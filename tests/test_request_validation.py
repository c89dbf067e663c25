"""One validation of a compile request (``interop.entry.request``), shared by ``hybrid.compile``, the
interpreter's launch and the ``hybrid`` command: each mistake is a clear error naming the argument."""
import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
from hybrid import interpret  # noqa: E402
from hybrid.cli import main  # noqa: E402
from interop.targets import arch
from interop.entry import request
from interop.errors import RequestError, RequestTypeError, TargetError  # noqa: E402
from interop.targets import TARGETS  # noqa: E402
from interop.triton.frontend import make_backend  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from tests.kernels import k_agree  # noqa: E402

L1 = gl.BlockedLayout([1], [32], [4], [0])
#: where request errors point: the kernel's definition
KERNEL_SITE = f"{k_agree.fn.__code__.co_filename}:{k_agree.fn.__code__.co_firstlineno}"
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
CONST = {"BLOCK": 128, "L1": L1}

# (what is wrong, compile arguments, error class, words the message must contain)
COMPILE_CASES = [
    ("unknown type", dict(signature={"x_ptr": "*fp99", "y_ptr": "*fp32"}), RequestError, ["x_ptr", "fp99", "fp32"]),
    ("empty type", dict(signature={"x_ptr": "", "y_ptr": "*fp32"}), RequestTypeError, ["x_ptr", "'*fp32'"]),
    ("no signature", dict(signature=None), RequestTypeError, ["signature=None", "dict"]),
    ("unknown constexpr", dict(constexprs={**CONST, "BOGUS": 1}), RequestError, ["BOGUS", "x_ptr, y_ptr, BLOCK, L1"]),
    ("num_warps=3", dict(num_warps=3), RequestError, ["num_warps=3", "power of two", "32"]),
    ("num_warps=0", dict(num_warps=0), RequestError, ["num_warps=0", "power of two"]),
    ("num_warps=64", dict(num_warps=64), RequestError, ["num_warps=64", "at most 32 warps"]),
    ("not a kernel", dict(kernel=lambda x: x), RequestTypeError, ["not a JIT kernel", "@hybrid.jit"]),
    ("typo", dict(num_wraps=4), RequestError, ["num_wraps", "did you mean 'num_warps'"]),
    ("extra entry", dict(signature={**SIG, "z": "i32"}), RequestError, ["'z'", "no such argument"]),
    ("negative stages", dict(num_stages=-1), RequestError, ["num_stages=-1", ">= 0"]),
    ("empty target", dict(target=""), RequestTypeError, ["target=''", "sm90a"]),
    ("no target", dict(target=None), RequestTypeError, [f"k_agree ({KERNEL_SITE}): target=None", "GPUTarget"]),
    ("misspelt target", dict(target="sm90"), RequestError, ["did you mean 'sm90a'"]),
    ("number as a string", dict(constexprs={"BLOCK": "128", "L1": L1}), RequestTypeError, ["BLOCK='128'", "BLOCK=128"]),
    ("warp size", dict(target=GPUTarget("cuda", 90, 64)), RequestError, ["32-thread warps", "not 64"]),
    ("fp8e4nv on sm80", dict(signature={"x_ptr": "*fp8e4nv", "y_ptr": "*fp32"}, target="sm80"), TargetError,
     [f"k_agree ({KERNEL_SITE}), argument 'x_ptr'", "fp8e4nv", "sm80", "sm90+"]),
]


def _compile(kernel=k_agree, signature=SIG, constexprs=CONST, target="sm90a", **options):
    return hybrid.compile(kernel, signature, constexprs, target=target, **options)


@pytest.mark.parametrize("what, arguments, error, words", COMPILE_CASES, ids=[c[0] for c in COMPILE_CASES])
def test_compile_refuses_a_bad_request_naming_the_argument(what, arguments, error, words):
    with pytest.raises(error) as caught:
        _compile(**arguments)
    assert all(word in str(caught.value) for word in words), str(caught.value)


# The launch's share: options, target, constexpr values and tensor element types, as the compiler says them.
LAUNCH_CASES = [c for c in COMPILE_CASES if c[0] in ("num_warps=3", "num_warps=0", "typo", "negative stages",
                                                     "empty target", "no target", "number as a string", "warp size")]


@pytest.mark.parametrize("what, arguments, error, words", LAUNCH_CASES, ids=[c[0] for c in LAUNCH_CASES])
def test_interpreter_launch_refuses_the_same_requests_with_the_same_error(what, arguments, error, words):
    launch = {"target": arguments.pop("target", "sm90a"), **arguments.pop("constexprs", CONST), **arguments}
    x, y = torch.randn(128), torch.zeros(128)
    with pytest.raises(error) as caught:
        interpret.launch(k_agree, (1, ), x, y, **launch)
    assert all(word in str(caught.value) for word in words), str(caught.value)
    with pytest.raises(error) as compiled:
        _compile(target=launch["target"], constexprs={k: launch.pop(k) for k in ("BLOCK", "L1")},
                 **{k: v for k, v in launch.items() if k != "target"})
    assert str(compiled.value) == str(caught.value)


def test_interpreter_refuses_a_tensor_of_an_element_type_the_target_lacks():
    x = torch.randn(128).to(torch.float8_e4m3fn)
    with pytest.raises(TargetError) as caught:
        interpret.launch(k_agree, (1, ), x, torch.zeros(128), **CONST, target="sm80")
    assert str(caught.value).startswith(f"k_agree ({KERNEL_SITE}), argument 'x_ptr' (*fp8e4nv): fp8e4nv is ")


def test_the_interpreter_takes_its_default_target_only_where_none_is_named():
    """Left out, the target is the default one (``interpreting()``'s documented default); an explicit
    ``None`` is refused as ``hybrid.compile`` refuses it, before the block runs."""
    with pytest.raises(RequestTypeError, match="target=None: expected one of sm80"):
        hybrid.interpreting(None)
    with pytest.raises(RequestTypeError, match="target=None: expected one of sm80"):
        interpret.interpreting(target=None)
    with hybrid.interpreting():
        x, y = torch.randn(128), torch.zeros(128)
        k_agree[(1, )](x, y, **CONST)
    assert torch.equal(y, 2 * x)


def test_valid_requests_pass_and_resolve_the_target():
    assert request.check_request(k_agree, SIG, CONST, "gfx942", {"num_warps": 16}) == TARGETS["gfx942"]
    assert request.check_request(k_agree, {**SIG, "BLOCK": "constexpr"}, CONST, TARGETS["sm80"], {}) == TARGETS["sm80"]
    request.check_type("p", "*kfp16")
    request.check_constexpr_value("ACT", "relu")   # a string that is no number is a fine constexpr
    with pytest.raises(RequestError, match="at most 16 warps"):
        request.check_options({"num_warps": 32}, TARGETS["gfx942"])   # wave64: 1024 threads are 16 warps


@pytest.mark.parametrize("target", TARGETS)
def test_fp8_rows_of_the_architecture_table_are_the_backends_own(target):
    """The dtype rows of ``interop.targets.arch.FEATURES`` say what Triton's backend supports per target."""
    gpu = TARGETS[target]
    backend = set(make_backend(gpu).parse_options({}).supported_fp8_dtypes)
    assert set(arch.supported_fp8_dtypes(gpu)) == backend


def test_cli_refuses_a_bad_option_as_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["build", "examples/softmax.py:softmax_kernel", "--target", "sm90a", "--num-warps", "3"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "num_warps=3" in err and "power of two" in err and "Traceback" not in err
