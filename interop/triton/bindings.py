"""Triton's MLIR bindings: parse, build, verify and run passes on tt/ttg IR."""
import tempfile

from triton._C.libtriton import gluon_ir, ir, passes

__all__ = ["gluon_ir", "ir", "parse_module", "passes"]


def parse_module(text: str, context):
    """``text`` parsed into a module of ``context`` (the bindings parse files, not strings);
    raises RuntimeError where it does not parse."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        module = ir.parse_mlir_module(f.name, context)
    module.context = context
    return module
