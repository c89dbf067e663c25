"""A Triton host's Gluon regions, finished inside Triton's own ``ttgir`` stage.

A Triton kernel with Gluon regions (``source.HybridTritonSource``) compiles as a Triton source:
``make_ir`` generates its tt IR, each Gluon call an opaque boundary (``triton_host``), and
Triton runs its ``ttir`` and ``ttgir`` stages as it composes them, so ``asm["ttir"]``,
``MLIR_ENABLE_DUMP``, ``TRITON_KERNEL_OVERRIDE`` and Triton's stage timing see them.

Triton's stage hook (installed once, after any hook already set: ``compat.install_stages_hook``)
extends the ``ttgir`` stage of every Triton-language compile: after Triton's passes, a module
that ``make_ir`` marked (``MARK``) has its Gluon regions built and spliced, then goes through
Gluon's own ``ttgir`` pipeline, as a Gluon host does. Any other module passes through unchanged.
``make_ir`` hands the work over (``hand_over``) through a ContextVar: Triton runs ``make_ir``
and the stages in one call of ``triton.compile``, on one thread.

A Gluon host's Triton regions went through Triton's ``ttir`` stage one by one while ``make_ir``
ran; their tt IR (``CompileContext.triton_ttir``) is handed over the same way (``hand_over_ttir``)
and put into the compile's metadata (``TTIR_KEY``) as the Gluon ``ttgir`` stage starts, so it
is kept in the metadata Triton caches with the binary; ``hybrid.compile`` serves it as
``asm["ttir"]``. Other Gluon compiles get no such key.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Callable

from ..instrumentation import timing
from . import backend_refusal
from ..triton import compat
from ..triton.bindings import ir
from ..triton.frontend import Language

#: Module attribute of a Triton host awaiting its Gluon regions; its value is the source's hash.
MARK = "hybrid.triton_host"
#: Key of a Gluon host's Triton-region tt IR in Triton's metadata (moved to ``asm["ttir"]``).
TTIR_KEY = "hybrid_ttir"


@dataclass(frozen=True)
class _Awaiting:
    key: str                          # the source's hash, also in the module's MARK
    finish: Callable[[object], object]   # ttg module -> the stitched module, Gluon regions in


@dataclass(frozen=True)
class _TTIR:
    options: object   # the compile's backend options: only its own stages take the text
    text: str


_awaiting: contextvars.ContextVar[_Awaiting | None] = contextvars.ContextVar("hybrid_triton_host", default=None)
_ttir: contextvars.ContextVar[_TTIR | None] = contextvars.ContextVar("hybrid_region_ttir", default=None)
#: the options of the Triton-language stages last extended in this context (``hand_over`` checks them)
_extended: contextvars.ContextVar[object] = contextvars.ContextVar("hybrid_stages_extended", default=None)


def hand_over(module, key: str, options, finish: Callable[[object], object]) -> None:
    """``make_ir``'s Triton host ``module`` is finished by ``finish`` inside its ``ttgir`` stage.

    Fails when the stages of this compile (``options``) were composed without the hook: a hook set
    later that does not call the one it replaced would leave the Gluon regions unbuilt."""
    if _extended.get() is not options:
        raise RuntimeError("Triton's stages for this compile were composed without triton-hybrid's stage hook "
                           "(knobs.runtime.add_stages_inspection_hook was replaced after importing hybrid); "
                           "set your hook before importing hybrid, or call the hook it replaces from it")
    module.set_attr(MARK, ir.builder(module.context).get_string_attr(key))
    _awaiting.set(_Awaiting(key, finish))


def hand_over_ttir(options, text: str | None) -> None:
    """A Gluon host's ``make_ir`` for ``options``: its Triton regions' tt IR (``None``: it has none)
    goes into the metadata of this compile's ``ttgir`` stage. Matched by ``options`` (a fresh
    object per compile), so text left behind by a compile that stopped early reaches no other."""
    _ttir.set(_TTIR(options, text) if text else None)


def _carrying_ttir(gluon_ttgir, options):
    """Gluon's ``ttgir`` stage, after putting the tt IR handed over for this compile into ``metadata``."""

    def ttgir(module, metadata: dict):
        handed = _ttir.get()
        if handed is not None and handed.options is options:
            _ttir.set(None)
            metadata[TTIR_KEY] = handed.text
        return gluon_ttgir(module, metadata)

    return ttgir


class HybridTTGIR:
    """Triton's ``ttgir`` stage, then, for a marked Triton host, its Gluon regions and Gluon's
    ``ttgir`` pipeline."""

    def __init__(self, triton_ttgir, backend, options):
        self.triton_ttgir, self.backend, self.options = triton_ttgir, backend, options

    def __call__(self, module, metadata: dict):
        module = self.triton_ttgir(module, metadata)
        key = module.get_operation().get_str_attr(MARK)
        if key is None:
            return module
        gluon: dict = {}
        self.backend.add_stages(gluon, self.options, Language.GLUON)
        with timing.inside_triton("ttgir"), timing.stage("stitching"):
            module = self._finish(module, key)
        return gluon["ttgir"](module, metadata)

    def stitched(self, module, metadata: dict):
        """Triton's ``ttgir`` stage and the Gluon regions spliced: the module Gluon's pipeline takes."""
        module = self.triton_ttgir(module, metadata)
        return self._finish(module, module.get_operation().get_str_attr(MARK))

    @staticmethod
    def _finish(module, key: str | None):
        awaiting = _awaiting.get()
        if awaiting is None or awaiting.key != key:
            raise RuntimeError("a Triton host with Gluon regions reached its ttgir stage without the compile that "
                               "generated it; compile the kernel (hybrid.compile or a launch), not its dumped IR")
        _awaiting.set(None)
        return awaiting.finish(module)


def _extend(backend, stages: dict, options, language) -> None:
    if "ttgir" not in stages:
        return
    if "llir" in stages:
        stages["llir"] = backend_refusal.guarded(stages["llir"], backend, "llir")
    if language == Language.TRITON:
        _extended.set(options)
        stages["ttgir"] = HybridTTGIR(stages["ttgir"], backend, options)
    elif language == Language.GLUON:
        stages["ttgir"] = _carrying_ttir(stages["ttgir"], options)


compat.install_stages_hook(_extend)
