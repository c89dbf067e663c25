"""MLIR's diagnostics, in the Python errors that a failed verify or pass pipeline raises.

MLIR prints diagnostics straight to the process's stderr (file descriptor 2). Triton's
bindings return only ``False`` or ``PassManager::run failed``. ``capture`` redirects the
descriptor for one step, so the error can quote the ``file:line: error: ...`` lines; the text
is written back to stderr afterwards, so nothing is lost. The descriptor is the whole
process's, so it is only redirected on the failure path: a failed check runs again under
``capture`` (``replayed``), and successful work that other threads may share never is.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
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
def capture(echo: bool = True) -> Iterator[Diagnostics]:
    """Collect what C++ writes to stderr during the block into the yielded ``Diagnostics``
    (written to stderr afterwards too, unless ``echo`` is false: a replay of what it printed)."""
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
            if echo:
                os.write(2, raw)


def replayed(check: Callable[[], object]) -> str:
    """The error diagnostics of ``check``, a step without side effects that just failed, run
    again with stderr captured."""
    with capture() as diagnostics, contextlib.suppress(Exception):
        check()
    return diagnostics.errors()


def verify(module) -> str | None:
    """None when ``module`` verifies, else MLIR's error diagnostics (``file:line: error: ...``)."""
    if module.verify():
        return None
    return replayed(module.verify) or "the module does not verify"


def run(pm, module, *args) -> None:
    """``pm.run(module, *args)``, raising ``RuntimeError`` with MLIR's error diagnostics where the
    pass left IR that does not verify (a pass cannot be run again on the IR it changed; what a
    pass reports on its own reaches stderr, and the error says that the pipeline failed)."""
    try:
        pm.run(module, *args)
    except RuntimeError as exc:
        raise RuntimeError(verify(module) or str(exc)) from exc
