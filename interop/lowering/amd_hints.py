"""``hybrid.amd.setprio`` and ``hybrid.amd.sched_barrier``: the scheduling hints Triton's AMD
passes write, for Gluon (and Triton) code to write too.

On gfx942 Triton's block ping-pong pass raises a warp's priority around its global loads and its
MFMAs (``rocdl.s.setprio``) and fences LLVM's scheduler between them (``rocdl.sched.barrier``).
A port written from that IR (``hybrid port``) needs both to build to the same machine code, and
Gluon has neither builtin (3.9's ``amd.hint.sched_barrier`` fences everything only, and earlier
releases have none). Each builtin parses its one ROCDL op in the kernel's own MLIR context and
moves it into a fresh ``scf.if true`` at the call, which the canonicalizer of every pipeline
(Gluon's included) folds away: the op is left where the call was, with the call's location.
A hint changes no value, so the interpreter runs it as nothing; every target other than AMD's
refuses it, in the compiler and the interpreter alike (``arch``: ``hybrid.amd.`` builtins).
"""
from __future__ import annotations

from ..targets import arch
from ..errors import ARCH_HINT, TargetError
from ..region import CallSite
from ..triton import compat
from ..triton.bindings import ir, parse_module
from ..triton.language import core as tl
from ..triton.language import unwrap_constexpr

#: LLVM's ``llvm.amdgcn.sched.barrier`` mask: the instruction classes that may cross the barrier.
SCHED_CLASSES = {"non_mem_non_sideeffect": 0x1, "valu": 0x2, "salu": 0x4, "mfma_wmma": 0x8, "all_vmem": 0x10,
                 "vmem_read": 0x20, "vmem_write": 0x40, "all_ds": 0x80, "ds_read": 0x100, "ds_write": 0x200,
                 "transcendental": 0x400}


@tl.builtin
def setprio(priority, _semantic=None, _generator=None):
    """``s_setprio priority``: this warp's issue priority from here on, 0 (lowest) to 3."""
    priority = unwrap_constexpr(priority)
    if not isinstance(priority, int) or not 0 <= priority <= 3:
        raise ValueError(f"hybrid.amd.setprio takes a priority from 0 to 3 (a constexpr), not {priority!r}")
    _emit(setprio, f"rocdl.s.setprio {priority}", _semantic, _generator)


@tl.builtin
def sched_barrier(*allow, _semantic=None, _generator=None):
    """A barrier LLVM's instruction scheduler moves no instruction across, except those of the
    classes named in ``allow`` (``SCHED_CLASSES``; none by default)."""
    names = tuple(unwrap_constexpr(a) for a in allow)
    unknown = [n for n in names if n not in SCHED_CLASSES]
    if unknown:
        raise ValueError(f"hybrid.amd.sched_barrier: unknown instruction class {unknown[0]!r}; the classes are "
                         f"{', '.join(SCHED_CLASSES)}")
    mask = 0
    for name in names:
        mask |= SCHED_CLASSES[name]
    _emit(sched_barrier, f"rocdl.sched.barrier {compat.sched_barrier_mask(mask, names)}", _semantic, _generator)


def classes_of(mask: str) -> tuple[str, ...]:
    """The class names of a ``rocdl.sched.barrier`` mask as Triton prints it: ``none``,
    ``valu|salu`` (3.9) or an integer (3.6 to 3.8)."""
    if mask.isdigit():
        return tuple(name for name, bit in SCHED_CLASSES.items() if int(mask) & bit)
    return tuple(name for name in mask.split("|") if name != "none")


setprio.hybrid_name = "hybrid.amd.setprio"
sched_barrier.hybrid_name = "hybrid.amd.sched_barrier"


def refuse_off_amd(builtin, builder, generator) -> None:
    """``builtin`` (``hybrid.amd.``) refused under upstream's compiler for a target other than
    AMD's (hybrid's compiler and the interpreter refuse it at the call: ``arch.check_builtin``)."""
    options = getattr(builder, "options", None)
    if isinstance(builder, ir.builder) and getattr(options, "backend_name", "hip") != "hip":
        site = CallSite.of(generator) if generator is not None else None
        feature = arch.feature_of_builtin(builtin)
        raise TargetError(f"{site}: {builtin.hybrid_name} is {feature.what}, which {options.arch} does not have "
                          f"(it needs {feature.needs})", ARCH_HINT)


def _emit(builtin, op: str, _semantic, _generator) -> None:
    builder = _semantic.builder
    if not isinstance(builder, ir.builder):   # the interpreter: a hint changes no value
        return
    refuse_off_amd(builtin, builder, _generator)
    site = CallSite.of(_generator) if _generator is not None else None
    quoted = site.file.replace("\\", "\\\\").replace('"', '\\"') if site else ""
    where = f'loc("{quoted}":{site.line}:0)' if site else ""
    holder = parse_module(f"module {{\n  tt.func @hint(%c: i1) {{\n    scf.if %c {{\n      {op} {where}\n    }}\n"
                          f"    tt.return\n  }}\n}}\n", _generator.context)
    blocks: list = []
    holder.walk(lambda o: blocks.append(o.get_block()) if o.get_name().startswith("rocdl.") else None)
    taken = builder.create_if_op([], builder.get_int1(True), False).get_then_block()
    blocks[0].move_before(taken)   # the hint's block (the op, its yield) replaces the empty one
    taken.erase()
