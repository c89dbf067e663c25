"""Porting a kernel region by region: differential testing of one region (``compare``)."""
from .compare import Comparison, OutputDiff, compare, with_region

__all__ = ["Comparison", "OutputDiff", "compare", "with_region"]
