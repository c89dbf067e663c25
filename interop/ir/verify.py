"""Verifying a module after a rewrite, so that malformed IR raises here, naming the step,
instead of aborting later in C++."""
from __future__ import annotations

from . import diagnostics


class VerifyError(RuntimeError):
    """A module does not verify after a rewrite; the compile turns this into a RegionError."""


def verify(module, step: str) -> None:
    """Raise ``VerifyError`` with MLIR's diagnostics where ``module`` does not verify after ``step``."""
    errors = diagnostics.verify(module)
    if errors:
        raise VerifyError(f"the stitched module does not verify after {step}:\n{errors}")
