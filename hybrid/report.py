"""Per-region report of built mixed kernels, as a ``rich`` table (data: ``FusedBinary.summary``)."""
from __future__ import annotations

import re

from rich.console import Console
from rich.table import Table


def short_layout(layout: str) -> str:
    """``#ttg.blocked<{sizePerThread = [1, 4], ...}>`` -> ``blocked[1,4|...]`` for tables."""
    match = re.match(r"#\w+\.(\w+)<", layout)
    if match is None:
        return layout
    lists = re.findall(r"\[([^\[\]]*)\]", layout)
    return f"{match.group(1)}[{'|'.join(x.replace(' ', '') for x in lists)}]"


def boundary_line(b: dict) -> str:
    arrow = "->" if b["direction"] == "in" else "<-"
    shape = "x".join(str(d) for d in b["shape"])
    cost = f"{b['conversions']} cvt" if b["conversions"] else "free"
    if b["conversions"] and b.get("movement"):   # records made before movements were known have none
        cost += f" via {b['movement']}" + (f" {b['shared_bytes']} B" if b["movement"] == "shared" else "")
    if b.get("handoff") == "shared":
        cost = "shared handoff" + (f" {b['shared_bytes']} B" if b.get("shared_bytes") else "") + \
            (f" + {b['fences']} fence" if b.get("fences") else "") + (f", {cost}" if b["conversions"] else "")
    why = "" if b["reason"].startswith("converted") else f" ({b['reason']})"   # the cost already says it
    return (f"r{b['region']} {b['direction']} {b['value']} {shape}x{b['dtype']} {arrow} "
            f"{short_layout(b['from_layout'])} => {short_layout(b['to_layout'])}: {cost}{why}")


def table(summaries: list[dict], title: str = "triton-hybrid: fused kernels") -> Table:
    out = Table(title=title, show_lines=True)
    for column in ("kernel", "target", "regions", "boundaries (conversions, shared-memory handoffs)", "entries", "shared B",
                   "binary B"):
        out.add_column(column, overflow="fold")
    for s in summaries:
        if "error" in s:
            out.add_row(s["kernel"], s["target"], "", f"[red]FAILED: {s['error']}[/red]", "", "", "")
            continue
        regions = "\n".join(f"r{r['index']} {r['function']} ({r['language']}) @{r['call_site'].rsplit('/', 1)[-1]}"
                            for r in s["regions"])
        out.add_row(s["kernel"], s["target"], regions, "\n".join(boundary_line(b) for b in s["boundaries"]),
                    str(s["kernel_entries"]), str(s["shared_bytes"]), str(s["binary_bytes"]))
    return out


def print_table(summaries: list[dict], console: Console | None = None) -> None:
    (console or Console(width=200)).print(table(summaries))


def timing_table(timing, title: str) -> Table:
    """An ``interop.timing.Timing`` as a table: each stage's own time, calls and share, costliest first."""
    out = Table(title=f"{title}: {timing.total:.3f} s" + "".join(f", {cache} cache hits {n}"
                                                              for cache, n in sorted(timing.hits.items())))
    for column in ("stage", "ms", "calls", "share"):
        out.add_column(column, justify="left" if column == "stage" else "right")
    for stage, seconds, calls in timing.rows():
        out.add_row(stage, f"{1000 * seconds:.1f}", str(calls or ""), f"{100 * seconds / max(timing.total, 1e-9):.0f}%")
    return out


def profile_table(kernel) -> Table:
    """A ``hybrid.profile.KernelProfile`` as a table: cycles per warp, all calls together."""
    out = Table(title=f"{kernel.kernel}: cycles per warp over {kernel.warps} warps (CTAs x warps x launches)")
    for column in ("scope", "kind", "calls/warp", "median", "p90", "per call median", "per call p90", "share"):
        out.add_column(column, justify="left" if column in ("scope", "kind") else "right")
    for s in kernel.scopes:
        out.add_row(s.scope, s.kind, f"{s.calls:g}", f"{s.cycles.median:.0f}", f"{s.cycles.p90:.0f}",
                    f"{s.per_call.median:.0f}", f"{s.per_call.p90:.0f}", f"{100 * s.share:.1f}%")
    return out
