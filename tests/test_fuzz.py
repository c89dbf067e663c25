"""Differential fuzz test: the compiler and the interpreter, on generated boundaries.

Hypothesis draws cases (region kind and nesting, tile size including 1 element and sizes that are
no power of two, dtype including bf16/fp16/fp8, layout, warps, target, a 0-d result across the
boundary). Each case is compiled for its target and interpreted, in a subprocess (``python -m
tests.fuzz_kernels``), so an abort is seen as a signal. The property: no case ends in a signal;
both accept it and the interpreter computes what torch computes, or both refuse it with the same
kind of error. ``make test`` runs a fixed set of 30 cases (derandomized); ``make fuzz`` draws
``HYBRID_FUZZ_EXAMPLES`` fresh ones and writes its figures to ``HYBRID_FUZZ_REPORT``.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interop.triton import compat  # noqa: E402

if compat.TRITON_MAJOR_MINOR < (3, 9):
    pytest.skip("the property is held on Triton 3.9; on 3.6 two gaps are known and not fixed: its builder cannot "
                "make an fp8 constant (the compiler fails in code generation where the interpreter refuses the "
                "fp8 arithmetic), and its AMD linker fails a case that links in a fresh process",
                allow_module_level=True)
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from interop.targets import TARGETS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("HYBRID_FUZZ_EXAMPLES", "30"))

cases = st.fixed_dictionaries({
    "kind": st.sampled_from(["gluon_host", "triton_host", "gluon", "triton", "nested"]),
    "block": st.sampled_from([1, 2, 3, 4, 16, 100, 128, 256]),
    "dtype": st.sampled_from(["fp32", "fp16", "bf16", "fp8e4nv", "fp8e5"]),
    "op": st.sampled_from(["affine", "scale", "sum"]),
    "target": st.sampled_from(list(TARGETS)),
    "spt": st.sampled_from([1, 1, 2, 3]),
    "num_warps": st.sampled_from([1, 2, 4, 4, 8]),
    "seed": st.integers(0, 2 ** 16),
    "scale": st.sampled_from([0.5, -3.0, 1e-3]),
})


class Worker:
    """A ``python -m tests.fuzz_kernels`` child that runs cases one at a time; one that dies (a
    signal) is reported for the case it was on and replaced for the next."""

    def __init__(self):
        self.proc = None

    def run(self, case: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_DEFAULT_FP_FUSION": "1"}
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz_kernels"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line.startswith("{"):
            return json.loads(line)
        code = self.proc.wait()
        return {"signal": -code if code < 0 else None, "stderr": self.proc.stderr.read()[-2000:]}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def verdict(case: dict, result: dict) -> str | None:
    """Why ``result`` breaks the property, or None."""
    if "signal" in result:
        return f"the process ended (signal {result['signal']}): {result['stderr'][-500:]}"
    compiled, interpreted = result["compile"], result["interpret"]
    if compiled["ok"] != interpreted["ok"]:
        side, other = (compiled, interpreted) if not compiled["ok"] else (interpreted, compiled)
        refused = "compiler" if side is compiled else "interpreter"
        return f"only the {refused} refuses: {side['kind']}: {side['message']}"
    if not compiled["ok"] and compiled["kind"] != interpreted["kind"]:
        return (f"both refuse, differently: compiler {compiled['kind']} ({compiled['message']}), "
                f"interpreter {interpreted['kind']} ({interpreted['message']})")
    if compiled["ok"] and (compiled["value"] != 1 or interpreted["value"]["mismatch"]):
        return "the interpreter's result differs from torch's" if compiled["value"] == 1 else "not one kernel entry"
    return None


class Tally:
    """The figures of a run, for ``bench/RESULTS.md``."""

    def __init__(self):
        self.tried = self.aborts = self.disagreements = self.accepted = 0
        self.refusals: dict[str, int] = {}
        self.problems: list[str] = []
        self.started = time.time()

    def add(self, case: dict, result: dict, problem: str | None) -> None:
        self.tried += 1
        self.aborts += "signal" in result
        self.disagreements += problem is not None and "signal" not in result
        if problem:
            self.problems.append(f"{case}: {problem}")
        if "compile" in result and result["compile"]["ok"]:
            self.accepted += 1
        elif "compile" in result:
            self.refusals[result["compile"]["kind"]] = self.refusals.get(result["compile"]["kind"], 0) + 1

    def write(self, path: str) -> None:
        Path(path).write_text(json.dumps({"cases": self.tried, "aborts": self.aborts,
                                          "disagreements": self.disagreements, "both_accept": self.accepted,
                                          "both_refuse": self.refusals, "seconds": round(time.time() - self.started),
                                          "problems": sorted(set(self.problems))[:40]},
                                         indent=1))


TALLY, WORKER = Tally(), Worker()


@pytest.fixture(scope="module", autouse=True)
def _worker():
    yield
    WORKER.close()
    if os.environ.get("HYBRID_FUZZ_REPORT"):
        TALLY.write(os.environ["HYBRID_FUZZ_REPORT"])


# No shrinking: every case costs a compile, and a failing case is reported whole.
@settings(max_examples=EXAMPLES, deadline=None, derandomize="HYBRID_FUZZ_REPORT" not in os.environ, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(case=cases)
def test_compiler_and_interpreter_agree_and_nothing_aborts(case):
    result = WORKER.run(case)
    problem = verdict(case, result)
    TALLY.add(case, result, problem)
    if "HYBRID_FUZZ_REPORT" not in os.environ:   # a long run counts every case, then fails below
        assert problem is None, f"{case}: {problem}"


def test_the_run_found_no_abort_and_no_disagreement():
    assert not TALLY.problems, "\n".join(TALLY.problems)


def test_the_verdict_catches_each_way_of_breaking_the_property():
    """The property's checks themselves: an abort, a one-sided refusal, different refusals, a wrong result."""
    ok = {"ok": True, "value": 1}
    right, wrong = {"ok": True, "value": {"mismatch": False}}, {"ok": True, "value": {"mismatch": True}}
    refused = {"ok": False, "kind": "LayoutError", "message": "m"}
    assert verdict({}, {"compile": ok, "interpret": right}) is None
    assert verdict({}, {"compile": refused, "interpret": dict(refused)}) is None
    assert "signal 6" in verdict({}, {"signal": 6, "stderr": "Assertion failed"})
    assert "only the compiler refuses" in verdict({}, {"compile": refused, "interpret": right})
    assert "differently" in verdict({}, {"compile": refused, "interpret": {**refused, "kind": "ValueError"}})
    assert "differs from torch" in verdict({}, {"compile": ok, "interpret": wrong})
