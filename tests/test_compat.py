"""Version handling lives in one module."""
import ast
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from interop.ir.canonicalize import canonicalize
from interop.ir.verify import verify
from interop.stitching import stitch
from interop.triton import compat
from interop.triton.bindings import gluon_ir, ir, parse_module

pytestmark = pytest.mark.version

ROOT = Path(__file__).resolve().parents[1]


def test_only_compat_reads_the_triton_version():
    """(``hybrid.__version__`` is the project's own version, not Triton's.)"""
    readers = [p.relative_to(ROOT).as_posix() for pkg in ("hybrid", "interop", "scheduler", "examples", "bench")
               for p in (ROOT / pkg).rglob("*.py")
               if "triton.__version__" in p.read_text() or "from triton import __version__" in p.read_text()]
    assert readers == ["interop/triton/compat.py"]


def test_unsupported_triton_version_fails_at_first_use_with_the_supported_range():
    """``import hybrid`` loads nothing (the loader needs no Triton); the first name that needs the
    compiler (here ``hybrid.jit``, as a kernel module's decorator) checks the version."""
    code = "import triton; triton.__version__ = '3.5.1'; import hybrid; hybrid.jit"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 1
    assert "ImportError" in proc.stderr and "3.6 through 3.9" in proc.stderr and "3.5.1" in proc.stderr


def test_supported_versions_parse():
    from interop.triton import compat
    assert compat._parse("3.9.0") == (3, 9) and compat._parse("3.6.0+git1234") == (3, 6)
    assert compat.TRITON_MAJOR_MINOR in compat.SUPPORTED


def test_import_needs_no_cffi():
    """GPU images may lack cffi: only the bundle loader needs it, not compiling or the JIT."""
    code = "import sys; sys.modules['cffi'] = None; import hybrid, examples.run; print(hybrid.compile.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_gluon_async_copy_is_cp_async_on_this_triton():
    """``compat.gluon_async_copy`` is the cp.async copy into shared memory (renamed in 3.9)."""
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy

    from examples.layouts import compile_pure
    from interop.triton.compat import gluon_async_copy

    copy = gluon_async_copy()

    @gluon.jit
    def stage(x_ptr, y_ptr, L: gl.constexpr):
        offs = gl.arange(0, 128, layout=L)
        smem = gl.allocate_shared_memory(gl.float32, [128], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        copy(smem, x_ptr + offs)
        async_copy.commit_group()
        async_copy.wait_group(0)
        gl.store(y_ptr + offs, smem.load(L))

    kernel = compile_pure(stage, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"L": gl.BlockedLayout([1], [32], [4], [0])},
                          "sm80", 4)
    assert "cp.async" in kernel.asm["ptx"] and "cp.async.wait_group" in kernel.asm["ptx"]


def _splat_constant(element: str, literal: str):
    """A module whose kernel converts a splat of ``literal`` at a boundary, and its constant op."""
    context = ir.context()
    ir.load_dialects(context)
    module = parse_module(f'''#rows = #ttg.blocked<{{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}}>
#cols = #ttg.blocked<{{sizePerThread = [8, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 4], order = [0, 1]}}>
module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  tt.func public @host() -> tensor<64x64x{element}, #cols> {{
    %c = arith.constant dense<{literal}> : tensor<64x64x{element}, #rows>
    %w = ttg.convert_layout %c {{hybrid.boundary = "0:in:0"}} : tensor<64x64x{element}, #rows> -> tensor<64x64x{element}, #cols>
    tt.return %w : tensor<64x64x{element}, #cols>
  }}
}}
''', context)
    found: list = []
    module.walk(lambda op: found.append(op) if op.get_name() == "arith.constant" else None)
    return module, context, found[0]


@pytest.mark.parametrize("element, literal, value", [
    ("f32", "0xFF800000", -math.inf), ("f32", "1.000000e+00", 1.0), ("f32", "-2.500000e-01", -0.25),
    ("f16", "0xFC00", -math.inf), ("f16", "1.500000e+00", 1.5), ("bf16", "0xFF80", -math.inf), ("bf16", "0x3F80", 1.0),
    ("i32", "-7", -7), ("i64", "9223372036854775807", 2**63 - 1), ("i8", "-1", -1), ("i1", "true", True),
    ("i1", "false", False), ("f8E4M3FN", "1.000000e+00", None)])
@pytest.mark.parametrize("direct", [None, False], ids=["bindings", "printed"])
def test_splat_constants_read_back_exactly(element, literal, value, direct):
    """Each splat a boundary may convert, read through the bindings where they read it (integers,
    3.8 on) and off its own printed line where they do not (floats and bools, everywhere)."""
    module, context, constant = _splat_constant(element, literal)
    read = compat.Integers(module, gluon_ir.GluonOpBuilder(context), direct).splat_constant(constant, element)
    assert read == value and type(read) is type(value)


@pytest.mark.parametrize("element, literal", [("f32", "0xFF800000"), ("bf16", "-2.000000e+00"), ("i32", "3"),
                                              ("i1", "true")])
def test_a_converted_splat_is_made_in_the_wanted_layout(element, literal):
    module, context, _ = _splat_constant(element, literal)
    before = re.search(r"arith\.constant dense<([^>]*)>", str(module)).group(1)
    assert stitch.fold_constant_conversions(module, gluon_ir.GluonOpBuilder(context)) == {"0:in:0"}
    canonicalize(module, context)
    verify(module, "folding the splat")
    ops: list = []
    module.walk(ops.append)
    (returned, ) = [op.get_operand(0) for op in ops if op.get_name() == "tt.return"]
    (made, ) = [op for op in ops if op.get_name() == "arith.constant"]   # the original one is dead
    assert made.get_result(0).id() == returned.id() and "ttg.convert_layout" not in str(module)
    assert f"arith.constant dense<{before}> : tensor<64x64x{element}, #" in str(module)


def _reads_the_release(node) -> bool:
    """Whether ``node`` asks ``compat`` which release this is (a capability flag or the version
    tuple; ``TRITON_VERSION``, only recorded in metadata, is not a branch)."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "compat"
               and n.attr.isupper() and n.attr != "TRITON_VERSION" for n in ast.walk(node))


def _marked_version(decorators) -> bool:
    return any("pytest.mark.version" in ast.unparse(d) for d in decorators)


def test_tests_that_branch_on_the_release_are_marked_version():
    """Triton 3.6 runs only the tests marked ``version`` (``make test-oldest``): a test whose
    checks differ by release must be among them, by its own mark or its module's."""
    unmarked = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "pytestmark"
               and "pytest.mark.version" in ast.unparse(n.value) for n in tree.body):
            continue
        for node in tree.body:
            is_test = isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            if _reads_the_release(node) and not (is_test and _marked_version(node.decorator_list)):
                unmarked.append(f"{path.name}:{node.lineno}")
    assert not unmarked, f"mark these @pytest.mark.version (or their module): {unmarked}"
