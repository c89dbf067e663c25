"""Remake hybrid's synthetic sample trace (``hybrid profile --sample``, ``hybrid/profile_sample.py``)
from the example it samples, built with region instrumentation as a profiled launch builds it.

    python -m examples.profile_sample regenerate
"""
import importlib
import json
import re
import sys
from pathlib import Path

from hybrid import profile_sample as sample
from interop.instrumentation import instrument


def regenerate(path: Path = sample.PATH) -> Path:
    """Build the example instrumented and write its synthetic trace to ``path``: each region
    scope costs its instructions (``fb.report()``), the host the rest of the kernel's."""
    example = importlib.import_module(f"examples.{sample.EXAMPLE}")
    with instrument.forced():
        fb = example.build(sample.TARGET)
    rep = fb.report()
    records = sample.records(fb.asm["ttgir"])
    regions = {row["bucket"].split()[0]: row["instructions"] for row in rep["rows"] if "language" in row}
    per = sample.CYCLES_PER_INSTRUCTION
    costs = {name: per * sum(regions.get(r, 0) for r in re.findall(r"r\d+", name.split(":")[0]))
             for _, name in records if name != instrument.KERNEL_SCOPE}
    host = per * (rep["totals"]["instructions"] - sum(regions.values()))
    data = sample.trace(fb.name, records, costs, host, fb.metadata["num_warps"])
    events = ",\n".join(json.dumps(e) for e in data.pop("traceEvents"))   # one event a line
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data)[:-1] + f', "traceEvents": [\n{events}\n]}}\n')
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["regenerate"]:
        sys.exit("usage: python -m examples.profile_sample regenerate")
    print(f"wrote {regenerate()}")
