"""``hybrid profile --sample``: the synthetic trace that ships (``hybrid/profile_sample.py``) has
the example's real region scopes, says it is synthetic, and shows the per-region view here."""
import json

import pytest

from hybrid import profile_sample
from hybrid.cli import main
from interop.instrumentation import instrument


@pytest.fixture(scope="module")
def instrumented():
    from examples import matmul_wgmma
    with instrument.forced():
        return matmul_wgmma.build(profile_sample.TARGET)


def test_the_sample_has_the_examples_scopes_and_says_it_is_synthetic(instrumented):
    data = json.loads(profile_sample.PATH.read_text())
    assert {e["name"] for e in data["traceEvents"]} == set(instrumented.scopes)
    assert {e["pid"].split()[0] for e in data["traceEvents"]} == {instrumented.name}
    assert profile_sample.note(profile_sample.PATH).startswith("SYNTHETIC sample, not measured")


def test_regenerating_gives_the_same_scopes_on_the_same_lanes(tmp_path):
    from examples.profile_sample import regenerate
    shipped, made = (json.loads(path.read_text()) for path in (profile_sample.PATH, regenerate(tmp_path / "t")))
    assert made["otherData"] == shipped["otherData"]
    assert [(e["name"], e["pid"], e["tid"]) for e in made["traceEvents"]] == \
        [(e["name"], e["pid"], e["tid"]) for e in shipped["traceEvents"]]


def test_cli_sample_shows_each_region_of_the_example(instrumented, tmp_path, capsys):
    assert main(["profile", "--sample", "-o", str(tmp_path / "p")]) == 0
    printed = capsys.readouterr().out
    assert "SYNTHETIC sample, not measured" in printed
    rows = {line.split("│")[1].strip() for line in printed.splitlines() if line.count("│") > 2}
    regions = {f"r{r.index}:{r.function}" for r in instrumented.regions}
    assert len(regions) == 2 and regions | {"kernel", "host"} == rows
    (kernel, ) = json.loads((tmp_path / "p.json").read_text())["kernels"]
    assert kernel["kernel"] == instrumented.name and kernel["warps"] == profile_sample.CTAS * 8


def test_sample_takes_no_script_or_trace(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["profile", "--sample", "--trace", str(profile_sample.PATH), "-o", str(tmp_path / "p")])
    assert exit.value.code == 2
    assert "--sample reads the sample trace" in capsys.readouterr().err


def test_a_trace_without_the_notice_has_none(tmp_path):
    path = tmp_path / "real.chrome_trace"
    path.write_text(json.dumps({"traceEvents": []}))
    assert profile_sample.note(path) is None
