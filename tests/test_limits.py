"""Limits checked before work: launch grids (the bundle loader and the interpreter share one
checker, ``scheduler.grid``), out-of-bounds accesses and shared memory in the interpreter.
(Request errors naming the kernel: ``tests/test_request_validation.py``.)"""
import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import hybrid  # noqa: E402
from hybrid import interpret  # noqa: E402
from hybrid.interpret.bounds import OutOfBoundsError  # noqa: E402
from hybrid.loader import BundledKernel  # noqa: E402
from interop.errors import SharedMemoryError  # noqa: E402
from interop.targets import arch  # noqa: E402
from interop.targets import TARGETS  # noqa: E402
from scheduler.grid import GridError, check_grid  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from tests import limits_kernels as lk  # noqa: E402
from tests.kernels import k_agree  # noqa: E402

L32 = gl.BlockedLayout([1], [32], [4], [0])
L64 = gl.BlockedLayout([1], [64], [4], [0])

# (grid, backend, words the one-line message must contain)
BAD_GRIDS = [
    ((), "cuda", ["grid ()", "1 to 3 dimensions", "got none"]),
    ((1, 1, 1, 1), "cuda", ["grid (1, 1, 1, 1)", "1 to 3 dimensions", "got 4"]),
    ((True, ), "cuda", ["x is True, a bool", "int >= 0"]),
    ((1.0, ), "cuda", ["x is 1.0, a float", "int >= 0"]),
    ((4, -1), "cuda", ["y is -1", "int >= 0"]),
    ("8", "cuda", ["expected a tuple of 1 to 3 ints", "got str"]),
    ((2**32, ), "cuda", ["x is 4294967296 programs", "at most 2147483647 (2**31-1)"]),
    ((2**31, ), "cuda", ["x is 2147483648 programs", "CUDA"]),
    ((1, 70000), "cuda", ["y is 70000 programs", "65535 along y and z"]),
    ((1, 1, 65536), "cuda", ["z is 65536 programs", "65535 along y and z"]),
    ((2**24, ), "hip", ["x is 16777216 programs", "fewer than 2**32 threads", "at most 16777215 programs of 256"]),
]


@pytest.mark.parametrize("grid, backend, words", BAD_GRIDS, ids=[f"{g!r}-{b}" for g, b, _ in BAD_GRIDS])
def test_the_grid_checker_refuses_in_one_line_naming_the_dimension(grid, backend, words):
    with pytest.raises(GridError) as caught:
        check_grid(grid, backend, 256, "k")
    message = str(caught.value)
    assert message.startswith("k[grid]: ") and "\n" not in message
    assert all(w in message for w in words), message


def test_the_grid_checker_takes_what_a_gpu_launches():
    assert check_grid(8, "cuda", 128, "k") == (8, 1, 1)
    assert check_grid((2**31 - 1, 65535, 65535), "cuda", 1024, "k") == (2**31 - 1, 65535, 65535)
    assert check_grid([3, 0], "cuda", 128, "k") == (3, 0, 1)   # 0 launches nothing, as in Triton's launcher
    assert check_grid((2**24 - 1, 70000), "hip", 256, "k") == (2**24 - 1, 70000, 1)   # HIP: y is not 65535-bound
    assert check_grid((np.int64(5), ), "cuda", 128, "k") == (5, 1, 1)


def _bundled(backend: str = "cuda") -> BundledKernel:
    """A loaded-looking bundle kernel that never reaches a driver (no binary is loaded before the grid check)."""
    entry = {"backend": backend, "warp_size": 32 if backend == "cuda" else 64, "num_warps": 4, "num_ctas": 1,
             "launch_cooperative_grid": False, "launch_pdl": False, "name": "k", "shared": 0, "hidden_params": 0}
    manifest = {"kernel": "k", "params": [{"name": "n", "type": "i32"}], "targets": {"t": entry}}
    return BundledKernel(manifest, "t", b"", driver_library="libhybrid-no-such-driver.so")


@pytest.mark.parametrize("grid, backend, words", [(g, b, w) for g, b, w in BAD_GRIDS if g != "8"],
                         ids=[f"{g!r}-{b}" for g, b, _ in BAD_GRIDS if g != "8"])
def test_the_loader_refuses_a_bad_grid_before_the_driver(grid, backend, words):
    with pytest.raises(GridError) as caught:
        _bundled(backend)[grid](1)
    assert all(w in str(caught.value) for w in words), str(caught.value)


def test_the_loader_launches_nothing_for_a_zero_grid():
    _bundled()[(0, 4)](1)   # returns without opening a driver (none exists here)


@pytest.mark.parametrize("grid, target, words", [
    ((), "sm90a", ["k_agree[grid]: grid ()", "got none"]),
    ((2**32, ), "sm90a", ["x is 4294967296 programs"]),
    ((1, 70000), "sm80", ["y is 70000 programs"]),
    ((True, ), "sm90a", ["x is True, a bool"]),
    ((1.0, ), "sm90a", ["x is 1.0, a float"]),
    ((1, 1, 1, 1), "sm90a", ["got 4"]),
    ((2**24, ), "gfx942", ["at most 16777215 programs of 256 threads"]),
])
def test_the_interpreter_refuses_the_grids_the_loader_refuses(grid, target, words):
    x, y = torch.randn(128), torch.zeros(128)
    layout = L64 if target.startswith("gfx") else L32
    with pytest.raises(GridError) as caught:
        interpret.launch(k_agree, grid, x, y, BLOCK=128, L1=layout, target=target)
    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert not y.any()   # nothing ran



def _line(fn, text: str) -> str:
    """``file:line`` of the line of ``fn``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(fn.fn)
    return f"{inspect.getsourcefile(fn.fn)}:{first + next(i for i, line in enumerate(lines) if text in line)}"


def _copy(language: str, x, y, n: int, load_at: int, store_at: int = 0) -> None:
    if language == "gluon":
        interpret.launch(lk.g_shifted_copy, (1, ), x, y, n, load_at, store_at, BLOCK=128, L=L32, target="sm90a")
    else:
        interpret.launch(lk.t_shifted_copy, (1, ), x, y, n, load_at, store_at, BLOCK=128, target="sm90a")


@pytest.mark.parametrize("language", ["gluon", "triton"])
@pytest.mark.parametrize("what, load_at, store_at, words", [
    ("load", 10**12, 0, ["out-of-bounds load", "element offset 1000000000000 of 'x_ptr'", "elements 0..127"]),
    ("store", 0, 10**12, ["out-of-bounds store", "element offset 1000000000000 of 'y_ptr'", "elements 0..127"]),
    ("off by one", 1, 0, ["out-of-bounds load", "element offset 128 of 'x_ptr'"]),
    ("negative", -3, 0, ["out-of-bounds load", "element offset -3 of 'x_ptr'"]),
])
def test_an_out_of_bounds_access_is_refused_with_the_line_and_offset(language, what, load_at, store_at, words):
    """Before, an access at offset 10**12 killed the process with SIGSEGV; one just past the end read
    whatever lay there."""
    x, y = torch.randn(128), torch.zeros(128)
    with pytest.raises(OutOfBoundsError) as caught:
        _copy(language, x, y, 128, load_at, store_at)
    message = str(caught.value)
    fn = lk.g_shifted_copy if language == "gluon" else lk.t_shifted_copy
    assert f"at {_line(fn, 'store(y_ptr')} in {fn.__name__} (program (0, 0, 0))" in message, message
    assert all(w in message for w in words), message


@pytest.mark.parametrize("language", ["gluon", "triton"])
def test_only_lanes_the_mask_keeps_are_checked(language):
    x, y = torch.randn(128), torch.zeros(128)
    with pytest.raises(OutOfBoundsError, match="element offset 128 of 'x_ptr'"):
        _copy(language, x, y, 4, 126)   # lanes 0..3 on: elements 126..129
    _copy(language, x, y, 2, 126)       # lanes 0..1 on: elements 126, 127
    assert torch.equal(y[:2], x[126:]) and not y[2:].any()
    _copy(language, x, y, 0, 10**12)    # every lane off: nothing is accessed, nothing checked


@pytest.mark.parametrize("language", ["gluon", "triton"])
def test_a_view_may_reach_the_rest_of_its_storage_and_no_further(language):
    base = torch.randn(192)
    x, y = base[64:], torch.zeros(128)
    _copy(language, x, y, 128, -64)    # elements 0..127 of the storage, as on the GPU
    assert torch.equal(y, base[:128])
    with pytest.raises(OutOfBoundsError, match="element offset -65 of 'x_ptr', whose storage holds elements -64..127"):
        _copy(language, x, y, 128, -65)


@pytest.mark.parametrize("kernel", ["gluon", "triton"])
def test_an_out_of_bounds_atomic_is_refused(kernel):
    x = torch.zeros(128)
    with pytest.raises(OutOfBoundsError, match="out-of-bounds atomic .* element offset 128 of 'x_ptr'"):
        if kernel == "gluon":
            interpret.launch(lk.g_shifted_atomic_add, (1, ), x, 128, 1, BLOCK=128, L=L32, target="sm90a")
        else:
            interpret.launch(lk.t_shifted_atomic_add, (1, ), x, 128, 1, BLOCK=128, target="sm90a")
    assert not x.any()   # refused before any lane was written


@pytest.mark.parametrize("target", ["sm80", "sm90a", "sm100a", "gfx942", "gfx950"])
def test_the_interpreter_refuses_shared_memory_over_every_targets_limit(target):
    """256 KiB in one Gluon buffer: over every target, compiled; before, the interpreter ran it."""
    x, y = torch.randn(128), torch.zeros(128)
    layout = L64 if target.startswith("gfx") else L32
    with pytest.raises(SharedMemoryError) as caught:
        interpret.launch(lk.g_big_shared, (1, ), x, y, ROWS=512, BLOCK=128, L=layout, target=target)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"g_big_shared needs 262144 B of shared memory; {target} has " \
                       f"{arch.shared_memory_limit(TARGETS[target])} B."
    assert lines[1] == f"  per allocation: g_big_shared (gluon, {_line(lk.g_big_shared, 'allocate_shared')}): 262144 B"
    assert lines[2].startswith("  hint: shrink the largest buffers")


@pytest.mark.parametrize("target", ["sm90a", "gfx942"])
def test_the_interpreter_refuses_the_shared_memory_the_compiler_refuses(target):
    """128 KiB: within sm90a's 227 KiB, over gfx942's 64 KiB, in a Gluon region of a Triton kernel too."""
    x, y = torch.randn(128), torch.zeros(128)
    layout = L64 if target.startswith("gfx") else L32
    try:
        hybrid.compile(lk.g_big_shared, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"ROWS": 256, "BLOCK": 128, "L": layout},
                       target=target)
        compiled = None
    except SharedMemoryError as exc:
        compiled = str(exc).splitlines()[0]
    try:
        interpret.launch(lk.g_big_shared, (1, ), x, y, ROWS=256, BLOCK=128, L=layout, target=target)
        interpreted = None
    except SharedMemoryError as exc:
        interpreted = str(exc).splitlines()[0]
    assert interpreted == compiled and (compiled is None) == (target == "sm90a"), (compiled, interpreted)


def test_a_triton_kernels_gluon_region_is_counted_and_a_loops_buffer_once():
    x, y = torch.randn(128), torch.zeros(128)
    with pytest.raises(SharedMemoryError, match=r"(?s)t_host_of_a_big_region needs 262144 B .* g_stage_twice \(gluon"):
        interpret.launch(lk.t_host_of_a_big_region, (1, ), x, y, BLOCK=128, target="sm90a")
    # 3 x 128 KiB, one at a time (each iteration's buffer replaces the last, as compiled): runs
    interpret.launch(lk.g_shared_per_iteration, (1, ), x, y, ROWS=256, BLOCK=128, L=L32, target="sm90a")
    assert torch.allclose(y, 3 * x)
