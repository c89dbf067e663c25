"""MLIR's diagnostics, in the Python errors that a failed verify or pass pipeline raises.

MLIR prints diagnostics straight to the process's stderr (file descriptor 2). Triton's
bindings return only ``False`` or ``PassManager::run failed``. ``capture`` redirects the
descriptor for one step, so the error can quote the ``file:line: error: ...`` lines. The text
is written back to stderr afterwards, so nothing is lost. Compiles run one per process (the
scheduler uses worker processes), so redirecting the descriptor is safe.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

_ERROR = re.compile(r"^(?:\S+:\d+:\d+|loc\(.*\)): error: ")
_NOT_MESSAGE = ("#", '"', "{", "}", " ", "loc(", "module", "%")


@dataclass
class Diagnostics:
    text: str = ""

    def errors(self) -> str:
        """The ``error:`` diagnostics and their continuation lines, without module dumps or notes."""
        kept: list[str] = []
        lines = iter(self.text.splitlines())
        for line in lines:
            if not _ERROR.match(line):
                continue
            kept.append(line.strip())
            for more in lines:
                if not more.strip() or more.startswith(_NOT_MESSAGE) or ": note:" in more or _ERROR.match(more):
                    break
                kept.append(more.strip())
        return "\n".join(dict.fromkeys(kept))


@contextlib.contextmanager
def capture() -> Iterator[Diagnostics]:
    """Collect what C++ writes to stderr during the block into the yielded ``Diagnostics``."""
    found = Diagnostics()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield found
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            raw = sink.read()
            found.text = raw.decode(errors="replace")
            os.write(2, raw)


def verify(module) -> str | None:
    """None when ``module`` verifies, else MLIR's error diagnostics (``file:line: error: ...``)."""
    with capture() as diagnostics:
        ok = module.verify()
    return None if ok else diagnostics.errors() or "the module does not verify"


def run(pm, module, *args) -> None:
    """``pm.run(module, *args)``, raising ``RuntimeError`` with MLIR's error diagnostics."""
    with capture() as diagnostics:
        try:
            pm.run(module, *args)
        except RuntimeError as exc:
            failure = exc
        else:
            return
    raise RuntimeError(diagnostics.errors() or str(failure)) from failure
