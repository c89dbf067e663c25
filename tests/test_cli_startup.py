"""The ``hybrid`` command answers ``--help``, ``--version``, an argument error and ``profile`` with no
GPU before it imports torch or Triton (seconds on a loaded machine): each command imports what it
needs when it needs it. Timings: ``bench/cli_startup.py``."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid.cli import gpu_here

ROOT = Path(__file__).resolve().parents[1]
#: runs the command in-process, then prints which heavy modules it imported (the scheduler package
#: itself loads nothing: ``scheduler.version`` gives ``hybrid.__version__``)
PROBE = ("import json, sys\nfrom hybrid.cli import main\ntry:\n    code = main(sys.argv[1:])\nexcept SystemExit as exc:\n"
         "    code = exc.code\nprint(json.dumps({'code': code, 'loaded': sorted(m for m in ('torch', 'triton', "
         "'interop', 'scheduler.planning', 'scheduler.cache') if m in sys.modules)}))")


def run(*argv: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    *out, last = proc.stdout.strip().splitlines()
    return json.loads(last), "\n".join(out) + proc.stderr


@pytest.mark.parametrize("argv,code,says", [
    (["--help"], 0, "triton-hybrid: mixed Triton/Gluon kernels"),
    (["build", "--help"], 0, "--dask ADDRESS"),
    (["--version"], 0, "triton-hybrid 0.1"),
    (["build"], 2, "the following arguments are required: MODULE:KERNEL"),
    (["build", "m.py:k", "-j", "0"], 2, "expected a positive number of worker processes"),
    (["no-such-command"], 2, "invalid choice: 'no-such-command'"),
])
def test_answers_without_importing_torch_or_triton(argv, code, says):
    found, text = run(*argv)
    assert found == {"code": code, "loaded": []}, text
    assert says in text


def test_version_names_the_installed_triton():
    from importlib import metadata
    found, text = run("--version")
    assert f"(Triton {metadata.version('triton')})" in text


@pytest.mark.skipif(gpu_here(), reason="a GPU is here: profile runs the script")
def test_profile_says_no_gpu_without_importing_torch():
    found, text = run("profile", "examples/softmax.py")
    assert found["code"] == 2 and "no GPU here" in text
    if sys.platform.startswith("linux"):   # elsewhere torch is asked
        assert found["loaded"] == [], text
