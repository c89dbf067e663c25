"""Region lowering, boundary planning and stitching of Triton and Gluon code at the ttg level."""
from .triton import compat  # noqa: F401  (fails early on an unsupported Triton)
