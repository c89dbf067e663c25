"""``hybrid.amd.mfma``: Gluon's AMD ``mfma`` at an input precision, as ``tl.dot`` takes one.

On gfx942 Triton's ``tl.dot`` of f32 operands is at ``tf32`` by default: the xf32 MFMA
(``v_mfma_f32_32x32x4_xf32``), with its own operand layout. Gluon's ``amd.cdna3.mfma`` and
``amd.cdna4.mfma`` take no input precision and build the IEEE f32 one (Triton 3.6 to 3.9), so a
port of such a kernel written from its IR (``hybrid port``) needs this builtin to build the
kernel's dot. Without ``input_precision`` it is Gluon's ``mfma``. The interpreter multiplies
at f32 whatever the precision, as it does a ``tl.dot``.
"""
from __future__ import annotations

from ..triton.language import core as tl
from ..triton.language import gluon_core, unwrap_constexpr
from .amd_hints import refuse_off_amd


@tl.builtin
def mfma(a, b, acc, input_precision=None, _semantic=None, _generator=None):
    """``a @ b + acc`` on AMD's matrix cores (``acc`` in an ``AMDMFMALayout``, ``a`` and ``b`` in
    its dot-operand layouts), at ``input_precision`` (a constexpr string: ``"tf32"`` on gfx942,
    ``"ieee"``, ...; None: the target's default for Gluon, IEEE)."""
    refuse_off_amd(mfma, _semantic.builder, _generator)
    precision = unwrap_constexpr(input_precision)
    allowed = _semantic.builder.options.allowed_dot_input_precisions
    if precision is not None and precision not in allowed:
        raise ValueError(f"hybrid.amd.mfma: input_precision {precision!r} is not one this target builds; it takes "
                         f"{', '.join(repr(p) for p in allowed)} (tf32 only on gfx942)")
    acc = unwrap_constexpr(acc)
    handle = _semantic.dot(a, b, acc, input_precision=precision, max_num_imprecise_acc=None,
                           out_dtype=acc.dtype).handle
    return gluon_core.tensor(handle, acc.type)


mfma.hybrid_name = "hybrid.amd.mfma"
