"""``hybrid report --html``: the per-region reports as one self-contained HTML page.

Per kernel and target, two bar charts drawn with inline CSS (no script, font or stylesheet to
fetch, so the file can be mailed or attached to a CI run): each bucket's share of the kernel's
machine instructions (regions, host, boundary conversions, shared and unattributed lines, as in
``fb.report()``), and each region's shared memory (what it allocates itself plus what its
boundaries put through shared memory) against the kernel's. Buffers whose lifetimes do not overlap
share space, so a region's bar can reach the kernel's total while others are not zero.
"""
from __future__ import annotations

from html import escape

_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.target { display: inline-block; vertical-align: top; margin: 0 2em 1.5em 0; min-width: 30em; }
.totals { color: #555; margin: 0.2em 0 0.6em; }
table { border-collapse: collapse; margin-bottom: 0.8em; }
caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
th { text-align: left; font-weight: normal; padding: 1px 0.8em 1px 0; white-space: nowrap; }
td.track { width: 16em; background: #f0f0f0; padding: 0; }
td.value { padding-left: 0.6em; white-space: nowrap; font-variant-numeric: tabular-nums; }
.bar { height: 1.1em; }
.triton { background: #3a7bd5; } .gluon { background: #e0803a; } .host { background: #7a7a7a; }
.other { background: #b9b9b9; }
"""


def page(reports: list[dict], title: str = "triton-hybrid: per-region report") -> str:
    """The HTML page for ``reports`` (``fb.report()`` dicts, in order; grouped by kernel)."""
    kernels: dict[str, list[dict]] = {}
    for rep in reports:
        kernels.setdefault(rep["kernel"], []).append(rep)
    body = "".join(f"<section><h2>{escape(kernel)}</h2>{''.join(_target(rep) for rep in reps)}</section>"
                   for kernel, reps in kernels.items())
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n")


def _target(rep: dict) -> str:
    totals = rep["totals"]
    regions = [row for row in rep["rows"] if "language" in row]
    instructions = [(_label(row), _kind(row), row["instructions"]) for row in rep["rows"]
                    if row["instructions"] or "language" in row]
    shared = [(_label(row), row["language"],
               row.get("shared_bytes", 0) + sum(b.get("shared_bytes", 0) for b in row.get("boundaries", [])))
              for row in regions]
    facts = (f"{totals['instructions']} instructions, {totals['registers']} registers, {totals['spills']} spilled, "
             f"{totals['shared_bytes']} B shared, {totals['num_warps']} warps")
    config = f'<p class="totals">config {escape(rep["config"])}</p>' if "config" in rep else ""
    return (f'<div class="target"><h3>{escape(rep["target"])}</h3>{config}<p class="totals">{escape(facts)}</p>'
            + _bars("share of instructions", instructions, totals["instructions"], "")
            + _bars(f"shared memory (kernel: {totals['shared_bytes']} B)", shared, totals["shared_bytes"], " B")
            + "</div>")


def _bars(caption: str, rows: list[tuple[str, str, int]], total: int, unit: str) -> str:
    """One bar per row, its length the row's share of ``total`` (drawn up to the whole track;
    the figure says when a region's buffers add up to more than the kernel's, which share space)."""
    if not rows:
        return f'<p class="totals">{escape(caption)}: no regions</p>'
    cells = []
    for label, kind, value in rows:
        share = 100.0 * value / total if total else 0.0
        cells.append(f'<tr><th>{escape(label)}</th><td class="track"><div class="bar {kind}" '
                     f'style="width: {min(share, 100.0):.1f}%"></div></td>'
                     f'<td class="value">{value}{unit} ({share:.0f}%)</td></tr>')
    return f"<table><caption>{escape(caption)}</caption>{''.join(cells)}</table>"


def _label(row: dict) -> str:
    return f"{row['bucket']} ({row['language']})" if "language" in row else row["bucket"]


def _kind(row: dict) -> str:
    """The bar's colour: the region's language, the host's own code, or the other buckets."""
    return row.get("language") or ("host" if row["bucket"] == "host" else "other")
