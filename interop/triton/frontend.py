"""Triton's compiler front end: the code generator, the sources ``triton.compile`` takes, the
backends and their stage languages, and the errors they raise."""
from triton.backends import backends
from triton.backends.compiler import Language
from triton.compiler import code_generator
from triton.compiler.compiler import ASTSource, make_backend
from triton.compiler.errors import CompilationError
from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction
from triton.runtime.jit import mangle_type

__all__ = ["ASTSource", "CompilationError", "GluonASTSource", "GluonJITFunction", "Language", "backends", "code_generator",
           "make_backend", "mangle_type"]
