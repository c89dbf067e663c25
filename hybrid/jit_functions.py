"""``hybrid.jit``: mark a kernel as mixed, so calls into the other language become regions."""
from __future__ import annotations

from collections import defaultdict

from triton.runtime import JITFunction, KernelInterface

from interop import setting
from interop.entry import parse_race
from interop.entry.source import HybridGluonSource, HybridTritonSource
from interop.triton.frontend import GluonJITFunction, backends


class _Interpretable:
    """``kernel[grid](...)`` runs in the interpreter under ``HYBRID_INTERPRET=1`` or
    ``hybrid.interpreting()``; otherwise it is upstream's launch, with one set of compiled
    kernels per build settings in effect (``interop.setting.current()``: boundary planning,
    region instrumentation), which upstream's in-memory cache key does not see."""

    def run(self, *args, grid, warmup, **kwargs):
        from hybrid import interpret
        if not interpret.enabled():
            self.device_caches = self._caches_by_settings.setdefault(setting.current().key,
                                                                     defaultdict(self.create_binder))
            run = super().run
            try:
                return parse_race.retrying(lambda: run(*args, grid=grid, warmup=warmup, **kwargs))
            except RuntimeError:
                if gpu_driver_active():
                    raise
                raise NoGPUError(self.__name__) from None   # upstream's "0 active drivers" adds nothing
        if not warmup:
            interpret.launch(self, grid, *args, **kwargs)
        return None


class NoGPUError(RuntimeError):
    """``kernel[grid](...)`` with no GPU here: says how to run the kernel in the interpreter.

    Launches never fall back to the interpreter on their own: a CPU run is slower by orders of
    magnitude and checks rather than times, so the author asks for it."""

    def __init__(self, kernel: str):
        self.kernel = kernel
        super().__init__(
            f"{kernel}[grid](...): no GPU here (Triton found no active GPU driver), so the kernel cannot launch.\n"
            f"  Run it on the CPU in hybrid's interpreter instead (docs/interpreter.md):\n"
            f"      with hybrid.interpreting():      # or HYBRID_INTERPRET=1 in the environment\n"
            f"          {kernel}[grid](...)\n"
            f"  or build it without a GPU: hybrid.compile({kernel}, signature, constexprs, target='sm90a').")

    def __reduce__(self):
        return type(self), (self.kernel,)


def gpu_driver_active() -> bool:
    """Whether a Triton backend has a GPU driver here (upstream's launch needs exactly one)."""
    return any(backend.driver.is_active() for backend in backends.values())


class HybridGluonJITFunction(_Interpretable, GluonJITFunction):
    """A Gluon kernel whose calls to ``@triton.jit`` functions are Triton regions.

    Launching (``kernel[grid](...)``), specialization and caching are upstream's JIT; only the
    AST source differs, so every compile goes through region lowering and stitching.
    """

    def create_binder(self):
        result = super().create_binder()
        self.ASTSource = HybridGluonSource
        return result


class HybridTritonJITFunction(_Interpretable, JITFunction):
    """A Triton kernel whose calls to ``@gluon.jit`` functions are Gluon regions."""

    def create_binder(self):
        result = super().create_binder()
        self.ASTSource = HybridTritonSource
        return result


def jit(kernel):
    """Stack on ``@gluon.jit`` or ``@triton.jit``: ``@hybrid.jit`` above the upstream decorator.

    Also takes a kernel already wrapped by ``@triton.autotune`` / ``@triton.heuristics`` (a
    library's kernel: ``hybrid.jit(lib.kernel)``): the JIT function inside is made hybrid and the
    wrapper is returned, so every config still goes through the autotuner.

    The JIT function is changed in place, not copied: every other reference to it (the library
    module's own name for it, say) launches the hybrid kernel from then on, for the whole process.
    """
    fn = kernel
    while isinstance(fn, KernelInterface) and not isinstance(fn, JITFunction):
        fn = getattr(fn, "fn", None)   # Autotuner / Heuristics keep the kernel they wrap as ``fn``
    if not isinstance(fn, JITFunction):
        raise TypeError(f"hybrid.jit takes a @gluon.jit or @triton.jit kernel (or one wrapped by @triton.autotune "
                        f"/ @triton.heuristics), not {type(kernel).__name__}: write @hybrid.jit above "
                        f"@gluon.jit / @triton.jit")
    _make_hybrid(fn)
    return kernel


def _make_hybrid(fn: JITFunction) -> None:
    if isinstance(fn, _Interpretable):
        return
    # The decorator receives the object upstream just made; re-classing it keeps every piece of
    # upstream state (specialization settings, caches) without re-deriving it.
    fn.__class__ = HybridGluonJITFunction if isinstance(fn, GluonJITFunction) else HybridTritonJITFunction
    # Upstream's __init__ made ``device_caches`` a defaultdict of the *bound* create_binder of
    # the old class; without a fresh one, launches would compile without stitching.
    fn.device_caches = defaultdict(fn.create_binder)
    fn._caches_by_settings = {setting.current().key: fn.device_caches}
