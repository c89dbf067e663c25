"""Every mistake in a ``hybrid`` command line is one line, ``hybrid: error: ...``, exit status 2,
no traceback, found before any build starts (issue 31); ``--debug`` shows the traceback."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid import cli
from hybrid.loader import load_bundle

ROOT = Path(__file__).resolve().parents[1]
KERNELS = "tests/editable_kernels.py"


@pytest.fixture
def files(tmp_path) -> Path:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "syntax.py").write_text("import triton\n\ndef broken(:\n    pass\n")
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "garbage.json").write_text("\x00 not json")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "events.json").write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": "k Core0 CTA0",
                                                                       "tid": "warp 0", "name": "r0", "ts": "x"}]}))
    (tmp_path / "folder").mkdir()
    return tmp_path


BAD = [  # (arguments, with {tmp} for the test's folder; what the one line must say)
    (["build", "{tmp}/missing.py:k", "--target", "sm80"], "no kernel module at {tmp}/missing.py"),
    (["build", "no_such_package.kernels:k", "--target", "sm80"], "cannot import no_such_package.kernels: No module "
                                                                 "named 'no_such_package'"),
    (["build", "{tmp}/syntax.py:k", "--target", "sm80"], "syntax error in {tmp}/syntax.py:3: invalid syntax"),
    (["build", f"{KERNELS}:no_such_kernel", "--target", "sm80"], "no JIT kernel named 'no_such_kernel' in "
                                                                  f"{KERNELS} (it has: h_bad, h_scale"),
    (["report", f"{KERNELS}:no_such_kernel", "--target", "sm80"], "no JIT kernel named 'no_such_kernel'"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "-o", "{tmp}/a_file/dist"],
     "-o/--out {tmp}/a_file/dist: {tmp}/a_file is a file, so nothing can be written under it"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "-o", "{tmp}/a_file"], "a file is there; expected a folder"),
    (["report", f"{KERNELS}:k_scale", "--target", "sm80", "--html", "{tmp}/folder"],
     "--html {tmp}/folder: is a folder; expected a file name"),
    (["report", f"{KERNELS}:k_scale", "--target", "sm80", "--json", "{tmp}/a_file/r.json"], "is a file, so nothing"),
    (["profile", "--trace", "{tmp}/garbage.json"], "{tmp}/garbage.json: not a Chrome trace (not JSON"),
    (["profile", "--trace", "{tmp}/empty.json"], "{tmp}/empty.json: not a Chrome trace (no 'traceEvents' list)"),
    (["profile", "--trace", "{tmp}/events.json"], "the scope event 'r0' on 'k Core0 CTA0' 'warp 0' has no numeric ts ('x')"),
    (["profile", "--trace", "{tmp}/missing.json"], "--trace {tmp}/missing.json: no such file"),
    (["profile"], "profile needs a script to run, or --trace FILE"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "-j", "-1"], "expected a positive number of worker "
                                                                      "processes, got '-1'"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "-j", "0"], "got '0'"),
    (["build", f"{KERNELS}:k_scale", "tests/kernels.py:k_scale", "--target", "sm80"],
     f"two kernels named 'k_scale' ({KERNELS}:k_scale and tests/kernels.py:k_scale)"),
    (["build", f"{KERNELS}:k_scale", "--targets", "all,bogus"], "unknown target(s) bogus; expected 'all' or some"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "--targets", "sm80,nope"], "unknown target(s) nope"),
    (["build", "{tmp}/exits.py:k", "--target", "sm80"], "the module called sys.exit(3) while being imported"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "--sign", "{tmp}/a_file"],
     "{tmp}/a_file: not a PEM private key (make one with `hybrid keygen"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "--sign", "{tmp}/missing.key"], "cannot read key file"),
    (["build", "no_colon", "--target", "sm80"], "kernel reference 'no_colon': expected"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "--constexpr", "BM"], "expected NAME=VALUE, got 'BM'"),
    (["build"], "the following arguments are required: MODULE:KERNEL (see `hybrid build --help`)"),
    (["frob"], "invalid choice: 'frob'"),
    (["keygen", "{tmp}/a_file"], "{tmp}/a_file exists; a key is never overwritten"),
    (["build", f"{KERNELS}:k_scale", "--target", "sm80", "--cache-dir", "{tmp}/a_file"],
     "--cache-dir {tmp}/a_file: a file is there; expected a folder"),
    (["report", f"{KERNELS}:k_bad", "--target", "sm80", "--json", "{tmp}/r.json"],   # a compile error, one line
     f"region 'h_bad' called at {ROOT / KERNELS}:"),
]


NEEDS_CRYPTOGRAPHY = pytest.mark.skipif(importlib.util.find_spec("cryptography") is None,
                                        reason="signing needs the cryptography package")


@pytest.mark.parametrize("argv, message", [pytest.param(a, m, id=" ".join(a), marks=NEEDS_CRYPTOGRAPHY if "--sign" in a
                                                        else ()) for a, m in BAD])
def test_a_bad_command_is_one_line_and_exit_status_2(files, capsys, argv, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    started = []
    monkeypatch.setattr(cli, "_build", lambda *a, **k: started.append(a))   # nothing may start building
    with pytest.raises(SystemExit) as exit_info:
        cli.main([a.replace("{tmp}", str(files)) for a in argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith("hybrid: error: ") and "Traceback" not in err, err
    assert message.replace("{tmp}", str(files)) in err, err
    assert not started


def _hybrid(*args, **env):
    return subprocess.run([sys.executable, "-m", "hybrid.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=600)


def test_the_process_prints_one_line_and_debug_prints_the_traceback(files):
    plain = _hybrid("build", str(files / "syntax.py") + ":k", "--target", "sm80")
    assert plain.returncode == 2 and plain.stderr.count("\n") == 1 and plain.stdout == "", plain.stderr
    debug = _hybrid("build", str(files / "syntax.py") + ":k", "--target", "sm80", "--debug")
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr
    assert "UserError: " in debug.stderr and "syntax error in" in debug.stderr


def test_an_unexpected_error_is_one_line_that_asks_for_debug(capsys, monkeypatch):
    monkeypatch.setattr(cli, "check_arguments", lambda args: (_ for _ in ()).throw(AttributeError("boom")))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["profile", "--trace", "x"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and err.count("\n") == 1
    assert err == "hybrid: error: AttributeError: boom (a bug in triton-hybrid: run again with --debug for the " \
                  "traceback)\n"


@pytest.mark.slow
def test_keygen_and_a_signed_build(tmp_path):
    pytest.importorskip("cryptography", reason="signing needs the cryptography package")
    assert cli.main(["keygen", str(tmp_path / "team.key")]) == 0
    assert (tmp_path / "team.key").is_file() and (tmp_path / "team.key.pub").is_file()
    common = ("build", f"{KERNELS}:k_shift", "--target", "sm80", "-o", str(tmp_path / "dist"), "--cache-dir",
              str(tmp_path / "cache"))
    built = _hybrid(*common, TRITON_ALWAYS_COMPILE="1")   # past Triton's cache, so regions are lowered (and cached)
    assert built.returncode == 0, built.stderr[-2000:]
    # --cache-dir holds both caches
    cached = sorted((tmp_path / "cache").rglob("*.json"))
    assert list((tmp_path / "cache" / "jobs").rglob("*.json"))
    assert list((tmp_path / "cache" / "regions").rglob("*.json"))
    signed = _hybrid(*common, "--sign", str(tmp_path / "team.key"))
    assert signed.returncode == 0, signed.stderr[-2000:]
    assert "bundle k_shift: " in signed.stdout and "(signed)" in signed.stdout and "cached" not in signed.stdout
    kernel = load_bundle(tmp_path / "dist" / "k_shift", arch="sm_80", trusted_keys=[tmp_path / "team.key.pub"])
    assert kernel.target == "sm80"
    assert sorted((tmp_path / "cache").rglob("*.json")) == cached   # a signed build reads and writes no cache
