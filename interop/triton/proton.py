"""Proton's dialect builders, for the region scopes ``interop.instrumentation.instrument`` records."""
from triton.profiler.language import triton_proton

__all__ = ["triton_proton"]
