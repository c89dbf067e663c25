"""``hybrid report --html``: the per-region reports as one self-contained HTML page, the place
to debug a mixed kernel by looking rather than reading.

Everything is inline (CSS and SVG; no script, font or stylesheet to fetch, so the file can be
mailed or attached to a CI run). Per kernel:

- its source, each line coloured by the region it belongs to (Triton regions blue, Gluon
  regions orange, the host's lines with instructions grey), with the machine instructions each
  line compiled to on every target;
- per target, two bar charts: each bucket's share of the instructions (regions, host, boundary
  conversions, shared and unattributed lines, as in ``fb.report()``), and each region's shared
  memory (its own allocations plus its boundaries' buffers) against the kernel's (buffers whose
  lifetimes do not overlap share space, so a region's bar can reach the kernel's total while
  others are not zero); and, where the report has one (``--baseline``), the all-Triton version's
  figures beside the hybrid kernel's;
- per target and boundary, the layouts on both sides drawn as element grids (the cell's colour is
  the warp that holds the element, its shade and number the lane, as Gluon's layout views show
  them; ``interop.boundaries.layout_views``), and what moving between them costs.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

import triton

from interop.boundaries.layout_views import placement

from .report import short_layout

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
.baseline { background: #2e9e6b; }
table.source { font: 12px ui-monospace, monospace; border-collapse: collapse; margin: 0.5em 0 1.5em; }
table.source td { padding: 0 0.6em; white-space: pre; }
table.source td.n { color: #888; text-align: right; }
table.source td.count { text-align: right; color: #333; font-variant-numeric: tabular-nums; }
table.source th { font: 11px system-ui, sans-serif; color: #555; padding: 0 0.6em; }
tr.line-triton td.code { background: #cfe0f7; } tr.line-gluon td.code { background: #f9dcc4; }
tr.line-host td.code { background: #ececec; } tr.line-shared td.code { background: #e4d4f4; }
.legend span { display: inline-block; padding: 0 0.5em; margin-right: 0.5em; font-size: 12px; }
.boundary { display: inline-block; vertical-align: top; margin: 0 1.5em 1em 0; font-size: 12px; }
.boundary p { margin: 0.2em 0; max-width: 60em; }
.grid text { font: 6px ui-monospace, monospace; fill: #111; }
"""
_TRITON = Path(triton.__file__).resolve().parent
#: how many rows and columns of a tensor a layout grid draws (its top-left corner)
GRID_ROWS, GRID_COLS, CELL = 16, 32, 13
#: warp hues of the layout grids
_HUES = (210, 25, 130, 280, 50, 340, 175, 95)


def page(reports: list[dict], title: str = "triton-hybrid: per-region report") -> str:
    """The HTML page for ``reports`` (``fb.report()`` dicts, in order; grouped by kernel)."""
    kernels: dict[str, list[dict]] = {}
    for rep in reports:
        kernels.setdefault(rep["kernel"], []).append(rep)
    body = "".join(f"<section><h2>{escape(kernel)}</h2>{_source(reps)}{''.join(_target(rep) for rep in reps)}"
                   f"{''.join(_boundaries(rep) for rep in reps)}</section>"
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
            + _baseline(rep) + "</div>")


def _baseline(rep: dict) -> str:
    """The hybrid kernel's figures beside its all-Triton version's, each bar against the larger."""
    if "baseline" not in rep:
        return ""
    mine, theirs = rep["totals"], rep["baseline"]["totals"]
    rows = []
    for key, unit in (("instructions", ""), ("registers", ""), ("spills", ""), ("shared_bytes", " B")):
        top = max(mine[key] or 0, theirs[key] or 0)
        rows += [(f"{key.replace('_bytes', '')}: hybrid", "host", mine[key] or 0, top, unit),
                 (f"{rep['baseline']['kernel']} (all Triton)", "baseline", theirs[key] or 0, top, unit)]
    cells = "".join(f'<tr><th>{escape(label)}</th><td class="track"><div class="bar {kind}" '
                    f'style="width: {100.0 * value / top if top else 0:.1f}%"></div></td>'
                    f'<td class="value">{value}{unit}</td></tr>' for label, kind, value, top, unit in rows)
    return f"<table><caption>beside the all-Triton version</caption>{cells}</table>"


def _source(reps: list[dict]) -> str:
    """The kernel's source lines that have instructions or belong to a region, with some context,
    coloured by owner, and the instructions of each line per target."""
    targets = [rep["target"] for rep in reps]
    counts: dict[str, dict[str, int]] = {}
    owners: dict[str, str] = {}
    languages = {row["bucket"]: row["language"] for rep in reps for row in rep["rows"] if "language" in row}
    for rep in reps:
        for line in rep.get("lines", []):
            counts.setdefault(line["where"], {})[rep["target"]] = line["instructions"]
            owners.setdefault(line["where"], line["owner"])
    files: dict[str, set[int]] = {}
    for where in counts:
        path, _, number = where.rpartition(":")
        if number.isdigit() and Path(path).is_file() and not Path(path).resolve().is_relative_to(_TRITON):
            files.setdefault(path, set()).add(int(number))   # Triton's library lines count in their region
    if not files:
        return ""
    head = "".join(f"<th>{escape(t)}</th>" for t in targets)
    legend = ('<p class="legend">source lines by owner: <span class="line-triton" style="background:#cfe0f7">'
              'Triton region</span><span style="background:#f9dcc4">Gluon region</span><span '
              'style="background:#ececec">host (the kernel around the regions)</span><span style="background:#e4d4f4">'
              'lines several regions share</span>; numbers: machine instructions per target (those of Triton\'s '
              'library functions, such as tl.max, count in their region\'s bar, not on a line)</p>')
    parts = [legend]
    for path, numbers in files.items():
        text = Path(path).read_text().splitlines()
        rows = []
        for start, end in _ranges(sorted(numbers)):
            if rows:
                rows.append(f'<tr><td class="n">…</td>{"<td></td>" * len(targets)}<td class="code"></td></tr>')
            for number in range(start, min(end, len(text)) + 1):
                where = f"{path}:{number}"
                owner = owners.get(where, "")
                kind = languages.get(owner) or ("shared" if owner == "shared" else "host" if where in counts else "")
                cells = "".join(f'<td class="count">{counts.get(where, {}).get(t, "") or ""}</td>' for t in targets)
                rows.append(f'<tr class="line-{kind}" title="{escape(owner)}"><td class="n">{number}</td>{cells}'
                            f'<td class="code">{escape(text[number - 1])}</td></tr>')
        parts.append(f'<table class="source"><caption>{escape(Path(path).name)}</caption><tr><th>line</th>{head}'
                     f'<th></th></tr>{"".join(rows)}</table>')
    return "".join(parts)


def _ranges(numbers: list[int], context: int = 1, gap: int = 6) -> list[tuple[int, int]]:
    """Runs of nearby line numbers, widened by ``context`` lines: the listing's chunks."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n - runs[-1][1] <= gap:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [(max(1, a - context), b + context) for a, b in runs]


def _boundaries(rep: dict) -> str:
    """Each boundary of ``rep``: its layouts before and after as grids, and what the move costs."""
    boundaries = [b for row in rep["rows"] for b in row.get("boundaries", [])]
    if not boundaries:
        return ""
    warp_size = 64 if rep["target"].startswith("gfx") else 32
    items = []
    for b in boundaries:
        grids = "".join(f"<div>{escape(side)}: {escape(short_layout(layout))}<br>"
                        f"{_grid(layout, b, rep['totals']['num_warps'] or 4, warp_size)}</div>"
                        for side, layout in (("from", b["from_layout"]), ("to", b["to_layout"])))
        items.append(f'<div class="boundary"><p><b>r{b["region"]} {escape(b["direction"])} {escape(b["value"])}</b> '
                     f'{escape("x".join(map(str, b["shape"])))} {escape(b["dtype"])}: {escape(_cost(b))}</p>'
                     f'<div style="display:flex;gap:1em">{grids}</div></div>')
    return f'<h3>{escape(rep["target"])}: boundaries</h3>{"".join(items)}'


def _cost(b: dict) -> str:
    """What moving the value costs, in words."""
    if b.get("handoff") == "shared":
        how = f"shared-memory handoff, {b.get('shared_bytes', 0)} B stored once"
    elif not b["conversions"]:
        how = "free (no conversion)"
    else:
        how = f"{b['conversions']} conversion(s) moving data via {b.get('movement', '?')}"
        if b.get("movement") == "shared":
            how += f" ({b.get('shared_bytes', 0)} B scratch, {b.get('barriers', 0)} barrier(s))"
        elif b.get("shuffles"):
            how += f" ({b['shuffles']} shuffles per thread)"
    return f"{how}; {b['reason']}"


def _grid(layout: str, b: dict, num_warps: int, warp_size: int) -> str:
    """An SVG grid of the tensor's top-left corner: each cell coloured by the warp that holds its
    element, shaded and numbered by the lane."""
    shape = tuple(b["shape"])
    if not 1 <= len(shape) <= 2:
        return "<i>(only 1-D and 2-D tensors are drawn)</i>"
    try:
        where = placement(layout, shape, b["dtype"], num_warps, warp_size)
    except ValueError:
        return "<i>(not drawn: a layout this Triton cannot parse)</i>"
    warp, lane = (a.reshape(1, -1) if len(shape) == 1 else a for a in (where.warp, where.lane))
    rows, cols = min(warp.shape[0], GRID_ROWS), min(warp.shape[1], GRID_COLS)
    cells = []
    for i in range(rows):
        for j in range(cols):
            w, t = int(warp[i, j]), int(lane[i, j])
            light = 88 - 40 * t / max(warp_size - 1, 1)
            cells.append(f'<rect x="{j * CELL}" y="{i * CELL}" width="{CELL - 1}" height="{CELL - 1}" '
                         f'fill="hsl({_HUES[w % len(_HUES)]},70%,{light:.0f}%)"><title>element ({i}, {j}): warp {w}, '
                         f'lane {t}</title></rect><text x="{j * CELL + 1}" y="{i * CELL + 8}">{t}</text>')
    more = "" if (rows, cols) == warp.shape else f" (top-left {rows}x{cols} of {'x'.join(map(str, shape))})"
    return (f'<svg class="grid" width="{cols * CELL}" height="{rows * CELL}" role="img" '
            f'aria-label="layout grid">{"".join(cells)}</svg><br><small>colour: warp; shade and number: lane'
            f'{escape(more)}{"; each element held by " + str(where.copies) + " threads" if where.copies > 1 else ""}'
            f'</small>')


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
