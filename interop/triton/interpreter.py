"""Triton's interpreter, as ``hybrid.interpret`` extends it: its builder, grid executor, AST
rewriter, reduction/scan helpers, dtype conversions, language patching and memory access."""
from triton.runtime import interpreter as _interp

FunctionRewriter = _interp.FunctionRewriter
GridExecutor = _interp.GridExecutor
InterpreterBuilder = _interp.InterpreterBuilder
ReduceOps = _interp.ReduceOps
ScanOps = _interp.ScanOps
TensorHandle = _interp.TensorHandle
LangPatchScope = _interp._LangPatchScope
patch_lang_core = _interp._patch_lang_core
patch_lang_tensor = _interp._patch_lang_tensor
convert_float = _interp._convert_float
np_dtype = _interp._get_np_dtype
implicit_cvt = _interp._implicit_cvt


def load(ptrs, mask, other, dtype):
    """Masked gather from host memory, as the interpreter's ``tl.load`` does."""
    return _interp._interpreter.load(ptrs, mask, other, dtype)


def store(ptrs, value, mask) -> None:
    """Masked scatter to host memory, as the interpreter's ``tl.store`` does."""
    _interp._interpreter.store(ptrs, value, mask)


def host_arguments(executor, args, kwargs):
    """The launch's arguments copied to the host, as the interpreter runs a kernel on them."""
    return executor._init_args_hst(args, kwargs)


def restore_arguments(executor, args, args_host, kwargs, kwargs_host) -> None:
    """The host copies' contents written back to the launch's device tensors."""
    executor._restore_args_dev(args, args_host, kwargs, kwargs_host)
