"""triton-hybrid installs like a library: the wheel ``pip wheel .`` (or ``python -m build``) makes,
installed into a new environment, holds every package and runs the README's quick start from
outside the checkout, and its ``hybrid`` command starts.

The new environment reuses this one's torch and Triton (their site-packages listed in a ``.pth``
file) and gets the wheel alone (``--no-deps``), so the test downloads nothing and takes seconds
more than the quick start itself."""
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.test_readme import quick_start

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hybrid", "interop", "scheduler")


def run(*argv, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kwargs)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def build_wheel(scratch: Path) -> Path:
    """The wheel, built from a copy of the checkout's sources (the build writes nothing here)."""
    source = scratch / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", scratch / "dist", source)
    (wheel,) = (scratch / "dist").glob("triton_hybrid-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    assert modules - names == set(), "modules missing from the wheel"
    assert not any(n.startswith(("tests/", "examples/", "bench/")) for n in names)
    return wheel


@pytest.mark.install
def test_installed_wheel_runs_the_quick_start_outside_the_checkout(tmp_path):
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # this environment's packages (torch, Triton, rich, ...) after the new one's own, not the checkout
    ours = [p for p in sys.path if "site-packages" in p and Path(p).is_dir()]
    assert sysconfig.get_paths()["purelib"] in ours
    (site / "reused.pth").write_text("\n".join(ours) + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel)

    code, _ = quick_start()
    (tmp_path / "quickstart.py").write_text(code + "print('imported from', hybrid.__file__)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYBRID_INTERPRET")}
    proc = run(python, "quickstart.py", cwd=tmp_path, env=env)
    assert "built for sm90a and gfx942; the interpreter agrees with torch" in proc.stdout
    assert f"imported from {site / 'hybrid' / '__init__.py'}" in proc.stdout

    version = run(venv / "bin" / "hybrid", "--version", cwd=tmp_path, env=env).stdout
    assert version.startswith("triton-hybrid 0.1") and "(Triton 3." in version
