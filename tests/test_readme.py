"""The README's quick start runs as written, in a fresh folder, and prints what the README shows."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> tuple[str, str]:
    """The quick start's code and the output the README shows for it (its first ``python`` and
    ``text`` blocks)."""
    section = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    return code, shown


def shape(line: str) -> str:
    """A line with its numbers masked and its spacing collapsed: figures vary with the Triton release."""
    return " ".join(re.sub(r"\d+", "#", line).split())


def test_the_quick_start_runs_as_written_and_prints_what_the_readme_shows(tmp_path):
    code, shown = quick_start()
    assert len(code.splitlines()) <= 30 and max(map(len, code.splitlines())) <= 100
    (tmp_path / "quickstart.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_DEFAULT_FP_FUSION", "HYBRID_INTERPRET")}
    env["PYTHONPATH"] = str(ROOT)   # the checkout, as `make .venv/bin/.ready` installs it
    proc = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]   # a plain run warns of nothing
    assert proc.stdout.rstrip().endswith("built for sm90a and gfx942; the interpreter agrees with torch")
    printed = {shape(line) for line in proc.stdout.splitlines()}
    missing = [line for line in shown.splitlines() if line.strip() and shape(line) not in printed]
    assert not missing, f"the README shows lines the quick start does not print: {missing}\n{proc.stdout}"
    assert "softmax on gfx942:" in proc.stdout
