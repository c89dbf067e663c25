"""Triton helpers and the kernels that call them, for ``hybrid port start`` (tests/test_port_start.py)."""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import hybrid

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


@triton.jit
def halve(x):
    return x * 0.5


@triton.jit
def centered_square(x, n, BN: tl.constexpr):
    """Half the squared distance of each row's elements from the row's mean: masking, a
    reduction, broadcasting back, and a Triton helper that the port keeps calling."""
    cols = tl.arange(0, BN)
    x = tl.where(cols[None, :] < n, x, 0.0)
    mean = tl.sum(x, axis=1) / n
    d = x - mean[:, None]
    return halve(d * d)


@hybrid.jit
@triton.jit
def k_centered(x_ptr, y_ptr, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offsets = rows[:, None] * n + cols[None, :]
    mask = cols[None, :] < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, centered_square(x, n, BN), mask=mask)


@triton.jit
def tile_dot(a, b):
    return tl.dot(a, b)


@triton.jit
def k_dot(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(y_ptr + r[:, None] * B + r[None, :], tile_dot(x, x))


@triton.jit
def orphan(x):
    """Called by no kernel."""
    return x + 1


def not_jit(x):
    return x


@gluon.jit
def already_gluon(x):
    return gl.convert_layout(x, gl.BlockedLayout([1], [32], [4], [0]))


def run_generated_test(files, test_name: str) -> None:
    """Import the compare test ``hybrid port start`` wrote (``files``: its ``PortFiles``) and run
    ``test_name`` from it, as pytest would; the port's module is forgotten after."""
    import importlib.util
    import sys
    folder = str(files.test.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"generated_{files.test.stem}", files.test)
        test = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(test)
        getattr(test, test_name)()   # raises unless compare(...).ok
    finally:
        sys.path.remove(folder)
        sys.modules.pop(files.port.stem, None)
