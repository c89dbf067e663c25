"""Version handling lives in one module."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
