"""Porting a Triton kernel to Gluon one function at a time.

``start`` writes a first Gluon version of one ``@triton.jit`` function and a compare test (of a
kernel, the whole kernel as a ``@gluon.jit`` kernel: ``whole_kernel``, the last step);
``compare`` runs a kernel as written and with one of its functions replaced by a candidate;
``from_ttgir.port`` writes the Gluon Triton's passes produced for one call (machine-code parity).
"""
from . import from_ttgir
from .compare import Comparison, OutputDiff, compare, with_region
from .errors import PortError
from .launch import Launch, capture_launch
from .scaffold import PortFiles, start

__all__ = ["Comparison", "Launch", "OutputDiff", "PortError", "PortFiles", "capture_launch", "compare", "from_ttgir",
           "start", "with_region"]
