"""``hybrid build``: argument parsing, bundles, the summary table, failures and the cache."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid import cli
from interop.entry import constexpr_text

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "hybrid.cli", "build", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, timeout=600)


def test_argument_parsing(capsys):
    args = cli.parser().parse_args(["build", "m.py:k", "--targets", "all", "--signature", "x=*fp32,n=i32",
                                    "--signature", "y=*fp16", "--constexpr", "BM=64,FLAG=true", "--constexpr", "MODE=fast"])
    assert args.targets == "all" and args.kernels == ["m.py:k"]
    assert cli.assignments(args.signature, str) == {"x": "*fp32", "n": "i32", "y": "*fp16"}
    assert cli.assignments(args.constexpr, constexpr_text.job_value) == {"BM": 64, "FLAG": True, "MODE": "fast"}
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["build", "examples/softmax.py:softmax_kernel", "--targets", "sm81"])
    assert exit_info.value.code == 2 and "expected 'all' or some of sm80" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["build", "examples/softmax.py:softmax_kernel", "--target", "sm80", "--constexpr", "BM"])
    assert "expected NAME=VALUE, got 'BM'" in capsys.readouterr().err


@pytest.mark.slow
def test_build_writes_bundles_reports_failures_and_reuses_the_cache(tmp_path):
    common = ["--target", "sm80", "--target", "gfx942", "--constexpr", "BLOCK=512", "-o", str(tmp_path / "dist"),
              "--cache-dir", str(tmp_path / "cache")]
    first = run("tests/editable_kernels.py:k_scale", "tests/editable_kernels.py:k_bad", *common)
    assert first.returncode == 1, first.stderr[-2000:]
    table = first.stdout
    assert "hybrid build" in table and table.count("built") == 2 and table.count("failed") == 2
    # The error is one unwrapped line whatever the checkout's path length: paths stay copyable.
    failed = [line for line in table.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 2 and "k_bad [sm80]: RegionError: region 'h_bad' called at " \
        f"{ROOT / 'tests' / 'editable_kernels.py'}:" in failed[0], table
    manifest = json.loads((tmp_path / "dist" / "k_scale" / "manifest.json").read_text())
    assert set(manifest["targets"]) == {"sm80", "gfx942"}
    assert manifest["source"] == "editable_kernels.py:k_scale"   # no build machine's folders in a bundle
    assert all(t["constexprs"]["BLOCK"] == 512 for t in manifest["targets"].values())
    assert not (tmp_path / "dist" / "k_bad").exists()

    second = run("tests/editable_kernels.py:k_scale", *common, "--archive")
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.count("cached") == 2 and "built" not in second.stdout
    assert (tmp_path / "dist" / "k_scale.zip").is_file()


@pytest.mark.slow
def test_the_console_script_finds_kernel_modules_in_the_working_directory(tmp_path):
    """The README's ``hybrid report examples/...`` from the checkout: ``examples`` is not installed,
    and a console script's ``sys.path`` starts at its own folder, not the working directory."""
    script = Path(sys.executable).with_name("hybrid")
    if not script.exists():
        pytest.skip("the project is not installed in this environment (no `hybrid` console script)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(script), "report", "examples/softmax.py:softmax_kernel", "--target", "sm80",
                           "--json", str(tmp_path / "report.json")], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "report.json").read_text())
