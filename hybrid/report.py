"""Per-region report of built mixed kernels, as a ``rich`` table (data: ``FusedBinary.summary``)."""
from __future__ import annotations

import io
import re

from rich import box
from rich.console import Console
from rich.markup import escape
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


#: Default output width (a normal terminal); ``--wide`` prints every boundary on its own line.
WIDTH, WIDE_WIDTH = 100, 200
#: Into a file or a pipe (a log, ``make demo | tee``), a table is as wide as its rows up to this, so
#: that no kernel or function name is split across lines; a failure's message wraps at spaces.
LOG_WIDTH, MESSAGE_WIDTH = 400, 60
#: What the summed-up boundary columns mean.
COLUMNS = ("bnd: boundaries, cvt: conversions left at them, bnd B: bytes they put through shared memory "
           "(--wide: each boundary)")


def boundary_totals(boundaries: list[dict]) -> dict:
    """A kernel's or a region's boundaries in three figures: how many, the conversions left at
    them, and the bytes they put through shared memory (handoff buffers, conversion scratch)."""
    return {"boundaries": len(boundaries), "conversions": sum(b["conversions"] for b in boundaries),
            "bytes": sum(b.get("shared_bytes", 0) for b in boundaries)}


def narrow_table(title: str, caption: str | None = None) -> Table:
    """The style of tables meant to fit ``WIDTH``: a rule under the header, no borders, one
    space between columns."""
    return Table(title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)


def region_table(rep: dict, wide: bool = False) -> Table:
    """One row per region and bucket; a region's boundaries summed up (count, conversions, bytes
    through shared memory), or with ``wide`` one line each."""
    totals = rep["totals"]
    config = f" ({rep['config']})" if "config" in rep else ""
    table = narrow_table(f"{rep['kernel']} on {rep['target']}{config}: {totals['instructions']} instructions, "
                                f"{totals['registers']} registers, {totals['spills']} spilled, "
                                f"{totals['shared_bytes']} B shared", None if wide else COLUMNS)
    for column in ("region", "language", "ttgir ops", "instructions", "share", "own shared B"):
        table.add_column(column, overflow="fold", justify="left" if column in ("region", "language") else "right")
    for column in ("boundaries",) if wide else ("bnd", "cvt", "bnd B"):
        table.add_column(column, overflow="fold", justify="left" if wide else "right")
    for row in rep["rows"]:
        share = f"{100 * row['instructions'] / totals['instructions']:.0f}%" if totals["instructions"] else "-"
        boundaries = row.get("boundaries", [])
        if wide:
            crossing = ["\n".join(boundary_line(b) for b in boundaries)]
        else:
            crossing = [str(v) for v in boundary_totals(boundaries).values()] if "language" in row else []
        table.add_row(row["bucket"], row.get("language", ""), str(row["ttgir_ops"]), str(row["instructions"]), share,
                      str(row.get("shared_bytes", "")), *crossing)
    return table


class Report(dict):
    """``FusedBinary.report()``: the per-region data (a JSON-able dict, as before) that prints as
    its table (``print(fb.report())``, or ``rich``'s console)."""

    def __str__(self) -> str:
        out = Console(width=WIDTH, record=True, file=io.StringIO())
        out.print(region_table(self))
        return "\n".join(line.rstrip() for line in out.export_text().strip("\n").splitlines())

    def __rich__(self) -> Table:
        return region_table(self)


def table(summaries: list[dict], title: str = "triton-hybrid: fused kernels", wide: bool = False) -> Table:
    """One row per kernel and target; boundaries summed up (count, conversions, bytes), or with
    ``wide`` one line each (``boundary_line``)."""
    return _wide_table(summaries, title) if wide else _compact_table(summaries, title)


#: The regions cell of a kernel that calls no other language on a target (its code for that
#: target takes a one-language path, e.g. mma_handoff keeps tl.dot in Triton on sm80 and AMD).
NO_REGIONS = "none (one language here)"


def kernel_cell(summary: dict) -> str:
    """``module:kernel`` where the summary names its module (several modules define a
    ``matmul_kernel``), else the kernel's name."""
    return f"{summary['module']}:{summary['kernel']}" if summary.get("module") else summary["kernel"]


def _compact_table(summaries: list[dict], title: str) -> Table:
    entries = sorted({s["kernel_entries"] for s in summaries if "error" not in s})
    out = narrow_table(title, f"{COLUMNS}; kernel entries per binary: {', '.join(map(str, entries))}")
    for column in ("kernel", "target"):
        out.add_column(column, overflow="fold")
    out.add_column("regions", overflow="fold", max_width=MESSAGE_WIDTH)
    for column in ("bnd", "cvt", "bnd B", "shared B", "binary B"):
        out.add_column(column, justify="right")
    for s in summaries:
        if "error" in s:
            out.add_row(kernel_cell(s), s["target"], f"[red]FAILED: {escape(s['error'])}[/red]")
            continue
        totals = boundary_totals(s["boundaries"])
        regions = "\n".join(f"r{r['index']} {r['function']} ({r['language']})" for r in s["regions"]) or NO_REGIONS
        out.add_row(kernel_cell(s), s["target"], regions, *map(str, totals.values()), str(s["shared_bytes"]),
                    str(s["binary_bytes"]))
    return out


def _wide_table(summaries: list[dict], title: str) -> Table:
    out = Table(title=title, show_lines=True)
    for column in ("kernel", "target", "regions", "boundaries (conversions, shared-memory handoffs)", "entries", "shared B",
                   "binary B"):
        out.add_column(column, overflow="fold")
    for s in summaries:
        if "error" in s:
            out.add_row(kernel_cell(s), s["target"], "", f"[red]FAILED: {escape(s['error'])}[/red]", "", "", "")
            continue
        regions = "\n".join(f"r{r['index']} {r['function']} ({r['language']}) @{r['call_site'].rsplit('/', 1)[-1]}"
                            for r in s["regions"]) or NO_REGIONS
        out.add_row(kernel_cell(s), s["target"], regions, "\n".join(boundary_line(b) for b in s["boundaries"]),
                    str(s["kernel_entries"]), str(s["shared_bytes"]), str(s["binary_bytes"]))
    return out


def console(wide: bool = False) -> Console:
    """Where tables go: on a terminal ``WIDTH`` columns, or ``WIDE_WIDTH`` for the per-boundary
    detail; into a file or a pipe ``LOG_WIDTH``."""
    out = Console(width=WIDE_WIDTH if wide else WIDTH)
    return out if out.is_terminal else Console(width=LOG_WIDTH)


def print_table(summaries: list[dict], out: Console | None = None, wide: bool = False) -> None:
    (out or console(wide)).print(table(summaries, wide=wide))


def timing_table(timing, title: str) -> Table:
    """A ``Timing`` (``interop.instrumentation.timing``) as a table: each stage's own time, calls and share."""
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
