"""Triton's interpreter, as ``hybrid.interpret`` extends it: its builder, grid executor, AST
rewriter, reduction/scan helpers, dtype conversions, language patching and memory access."""
from triton.runtime import interpreter as _interp
from triton.runtime.interpreter import (FunctionRewriter, GridExecutor, InterpreterBuilder, ReduceOps, ScanOps,
                                        TensorDescHandle, TensorHandle)
from triton.runtime.interpreter import _convert_float as convert_float
from triton.runtime.interpreter import _get_np_dtype as np_dtype
from triton.runtime.interpreter import _implicit_cvt as implicit_cvt
from triton.runtime.interpreter import _LangPatchScope as LangPatchScope
from triton.runtime.interpreter import _patch_lang_core as patch_lang_core
from triton.runtime.interpreter import _patch_lang_tensor as patch_lang_tensor
from triton.runtime.interpreter import np_umulhi_u64

__all__ = ["FunctionRewriter", "GridExecutor", "InterpreterBuilder", "LangPatchScope", "ReduceOps", "ScanOps",
           "TensorDescHandle", "TensorHandle", "convert_float", "host_arguments", "implicit_cvt", "load", "np_dtype",
           "np_umulhi_u64", "padding_option", "patch_lang_core", "patch_lang_tensor", "restore_arguments", "store"]


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


def padding_option(padding: str):
    """Upstream's descriptor padding (the interpreter's loads compare it with the IR enum)."""
    return _interp._ir.PADDING_OPTION.PAD_NAN if padding == "nan" else _interp._ir.PADDING_OPTION.PAD_ZERO
