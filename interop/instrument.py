"""Per-region Proton scopes: one ``proton.record`` start/end pair around each region instance.

Proton keeps Triton-level scopes off because tt->ttg passes move code across them. Here the
pair is placed where the region's code lands after stitching, at the ttg level: around the
placeholder call in a Gluon host (no pass reorders a Gluon host before the region is inlined
between the two records) and around the Gluon call that replaces the boundary in a Triton
host (after Triton's passes have run). Scopes are named ``r<index>:<function>``.

It is on while Proton's instrumentation mode is (``proton.start(..., mode="instrumentation")``
sets the flag this reads), or inside ``forced()`` (for looking at the instrumented IR).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

_forced = contextvars.ContextVar("hybrid_instrument_regions", default=False)


def enabled() -> bool:
    if _forced.get():
        return True
    from triton.profiler.language import flags
    return bool(flags.instrumentation_on)


@contextlib.contextmanager
def forced() -> Iterator[None]:
    token = _forced.set(True)
    try:
        yield
    finally:
        _forced.reset(token)


def scope_name(region) -> str:
    return f"r{region.index}:{region.function}"


def record(builder, region, start: bool) -> None:
    from triton.profiler.language import triton_proton
    triton_proton.create_proton_record(builder, start, scope_name(region))


def load_dialect(context) -> None:
    from triton.profiler.language import triton_proton
    triton_proton.load_dialects(context)
