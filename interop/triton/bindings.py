"""Triton's MLIR bindings: parse, build, verify and run passes on tt/ttg IR."""
from triton._C.libtriton import gluon_ir, ir, passes

__all__ = ["gluon_ir", "ir", "passes"]
