"""``hybrid report --html``: the per-region reports as one self-contained HTML page, the place
to debug a mixed kernel by looking rather than reading.

Everything is inline (CSS and SVG; no script, font or stylesheet to fetch, so the file can be
mailed or attached to a CI run; what is interactive is HTML's ``<details>`` and CSS). Per kernel:

- a region picker: choosing a region dims every line, boundary and listing entry of the others;
- its source, each line coloured by the region it belongs to (Triton regions blue, Gluon
  regions orange, the host's lines with instructions grey), with the machine instructions each
  line compiled to on every target; a line's number links to what it compiled to (its ttgir ops
  and its SASS/AMDGCN instructions per target, ``attribution.code_by_line``), and with
  ``--baseline`` the all-Triton version's source is listed beside it with its own counts;
- per target, two bar charts: each bucket's share of the instructions (regions, host, boundary
  conversions, shared and unattributed lines, as in ``fb.report()``), and each region's shared
  memory (its own allocations plus its boundaries' buffers) against the kernel's (buffers whose
  lifetimes do not overlap share space, so a region's bar can reach the kernel's total while
  others are not zero); and, where the report has one (``--baseline``), the all-Triton version's
  figures beside the hybrid kernel's;
- per target and boundary, the layouts on both sides drawn as element grids (the cell's colour is
  the warp that holds the element, its shade and number the lane, as Gluon's layout views show
  them; ``interop.boundaries.layout_views``), each layout's notation spelled out, and what moving
  between them costs. Boundaries that cost nothing (no conversion, no bytes) are one line,
  expanded on a click.
"""
from __future__ import annotations

import functools
import re
from html import escape
from pathlib import Path

import triton

from interop.boundaries.layout_views import NotDistributed, placement

from .attribution import LineCode
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
.listings { display: flex; gap: 2.5em; align-items: flex-start; }
.listing { flex: 0 1 auto; min-width: 0; overflow-x: auto; }
table.source { font: 12px ui-monospace, monospace; border-collapse: collapse; margin: 0.5em 0 1.5em; }
table.source td { padding: 0 0.6em; white-space: pre; }
table.source td.n { color: #888; text-align: right; }
table.source td.n a { color: #2458b3; }
table.source td.count { text-align: right; color: #333; font-variant-numeric: tabular-nums; }
table.source th { font: 11px system-ui, sans-serif; color: #555; padding: 0 0.6em; }
tr.line-triton td.code { background: #cfe0f7; } tr.line-gluon td.code { background: #f9dcc4; }
tr.line-host td.code { background: #ececec; } tr.line-shared td.code { background: #e4d4f4; }
tr.line-baseline td.code { background: #d5efe2; }
.legend span { display: inline-block; padding: 0 0.5em; margin-right: 0.5em; font-size: 12px; }
.picker { font-size: 13px; margin: 0.6em 0; }
.picker label { display: inline-block; border: 1px solid #bbb; border-radius: 3px; padding: 0.1em 0.6em 0.1em 0.3em;
  margin: 0 0.4em 0.3em 0; cursor: pointer; }
details > summary { cursor: pointer; }
details.drill { margin: 0.1em 0; font-size: 12px; }
details.drill summary code { white-space: pre; }
details.drill pre { font: 12px ui-monospace, monospace; background: #f6f6f6; padding: 0.4em 0.6em;
  margin: 0.2em 0 0.5em; overflow-x: auto; max-height: 30em; }
details.drill h4 { font-size: 12px; margin: 0.5em 0 0; }
details.free { font-size: 12px; margin: 0.3em 0 1em; }
.boundary { display: inline-block; vertical-align: top; margin: 0 1.5em 1em 0; font-size: 12px; }
.boundary p { margin: 0.2em 0; max-width: 60em; }
.grids { display: flex; flex-direction: column; gap: 0.6em; }
.notation { color: #555; font-size: 12px; max-width: 70em; }
abbr[title] { text-decoration: underline dotted; cursor: help; }
.grid text { font: 11px ui-monospace, monospace; fill: #111; text-anchor: middle; }
"""
_TRITON = Path(triton.__file__).resolve().parent
#: how many rows and columns of a tensor a layout grid draws (its top-left corner), and the
#: cell's size in pixels (a two-digit lane number in 11 px type fits)
GRID_ROWS, GRID_COLS, CELL = 8, 32, 22
#: warp hues of the layout grids
_HUES = (210, 25, 130, 280, 50, 340, 175, 95)
#: how the short layout notation reads, shown above each target's boundaries
NOTATION = ("Layouts are written kind[list|list|...]: the layout's parameter lists in order (hover one for its full "
            "text). A blocked layout is blocked[sizePerThread|threadsPerWarp|warpsPerCTA|order]: "
            "blocked[1,4|4,8|4,1|1,0] gives each thread 1x4 neighbouring elements, lays a warp's 32 threads out "
            "4x8 and the CTA's warps 4x1, with dimension 1 varying fastest (order lists the dimensions fastest "
            "first). A slice layout drops one dimension (dim) of its parent's.")


def page(reports: list[dict], title: str = "triton-hybrid: per-region report",
         code: list[dict[str, LineCode]] | None = None, baseline_code: list[dict[str, LineCode]] | None = None) -> str:
    """The HTML page for ``reports`` (``fb.report()`` dicts, in order; grouped by kernel). ``code``,
    one per report (``attribution.code_by_line``), gives each source line its drill-down;
    ``baseline_code`` the same for each report's ``--baseline`` kernel."""
    _lines_of.cache_clear()   # the sources as they are now
    kernels: dict[str, list[tuple[dict, dict[str, LineCode], dict[str, LineCode]]]] = {}
    for i, rep in enumerate(reports):
        kernels.setdefault(rep["kernel"], []).append((rep, code[i] if code else {},
                                                      baseline_code[i] if baseline_code else {}))
    body = "".join(_kernel(f"k{i}", kernel, entries) for i, (kernel, entries) in enumerate(kernels.items()))
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>\n")


def _kernel(kid: str, kernel: str, entries: list[tuple[dict, dict[str, LineCode], dict[str, LineCode]]]) -> str:
    reps = [rep for rep, _, _ in entries]
    anchors = _anchors(f"{kid}-line", [code for _, code, _ in entries])
    base_anchors = _anchors(f"{kid}-base-line", [code for _, _, code in entries])
    drill = _drilldown("What each source line compiled to",
                       [(rep["target"], rep.get("lines", []), code) for rep, code, _ in entries], anchors)
    if base_anchors:
        name = next(rep["baseline"]["kernel"] for rep in reps if "baseline" in rep)
        drill += _drilldown(f"What each line of {name} (all Triton) compiled to",
                            [(rep["target"], [], code) for rep, _, code in entries], base_anchors)
    return (f'<section id="{kid}"><h2>{escape(kernel)}</h2>{_picker(kid, reps)}'
            f"{_source(reps, anchors, base_anchors)}{drill}{''.join(_target(rep) for rep in reps)}"
            f"{''.join(_boundaries(rep) for rep in reps)}</section>")


def _anchors(prefix: str, codes: list[dict[str, LineCode]]) -> dict[str, str]:
    """``file:line`` -> the id of its drill-down entry, for every listed line that has code."""
    return {where: f"{prefix}-{i}" for i, where in
            enumerate(sorted({w for code in codes for w in code if _shown(w)}, key=_line_key))}


def _slug(owner: str) -> str:
    """The class suffix of a bucket (``r0 row_stats`` -> ``r0``; ``host``, ``shared``)."""
    return owner.split()[0]


def _picker(kid: str, reps: list[dict]) -> str:
    """Radio buttons, one per region and one for the host: the chosen one's lines, boundaries and
    drill-down entries stay, the others' are dimmed (CSS ``:has``, no script)."""
    buckets = {row["bucket"]: row["language"] for rep in reps for row in rep["rows"] if "language" in row}
    if not buckets:
        return ""
    choices = [*((_slug(b), f"{b} ({language})") for b, language in buckets.items()), ("host", "host")]
    rules = "".join(f"#{kid}:has(#{kid}-pick-{slug}:checked) .own:not(.own-{slug}) {{ opacity: 0.25; }}"
                    for slug, _ in choices)
    radios = "".join(f'<label><input type="radio" name="{kid}-pick" id="{kid}-pick-{slug}">{escape(label)}</label>'
                     for slug, label in choices)
    return (f'<style>{rules}</style><p class="picker">show region: <label><input type="radio" name="{kid}-pick" '
            f'id="{kid}-pick-all" checked>all</label>{radios}</p>')


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


def _source(reps: list[dict], anchors: dict[str, str], base_anchors: dict[str, str]) -> str:
    """The kernel's source lines that have instructions or belong to a region, with some context,
    coloured by owner, and the instructions of each line per target; beside it, the all-Triton
    version's (``--baseline``, where the reports carry its lines)."""
    targets = [rep["target"] for rep in reps]
    counts: dict[str, dict[str, int]] = {}
    owners: dict[str, str] = {}
    languages = {row["bucket"]: row["language"] for rep in reps for row in rep["rows"] if "language" in row}
    for rep in reps:
        for line in rep.get("lines", []):
            counts.setdefault(line["where"], {})[rep["target"]] = line["instructions"]
            owners.setdefault(line["where"], line["owner"])

    def kind(where: str) -> str:
        owner = owners.get(where, "")
        return languages.get(owner) or ("shared" if owner == "shared" else "host" if where in counts else "")

    listings = _listing(counts, targets, kind, owners, anchors)
    if not listings:
        return ""
    baseline: dict[str, dict[str, int]] = {}
    for rep in reps:
        for line in rep.get("baseline", {}).get("lines", []):
            baseline.setdefault(line["where"], {})[rep["target"]] = line["instructions"]
    if baseline:
        name = next(rep["baseline"]["kernel"] for rep in reps if "baseline" in rep)
        listings += _listing(baseline, targets, lambda where: "baseline" if where in baseline else "", {}, base_anchors,
                             f"{name} (all Triton): ")
    legend = ('<p class="legend">source lines by owner: <span class="line-triton" style="background:#cfe0f7">'
              'Triton region</span><span style="background:#f9dcc4">Gluon region</span><span '
              'style="background:#ececec">host (the kernel around the regions)</span><span style="background:#e4d4f4">'
              'lines several regions share</span>' + ('<span style="background:#d5efe2">the all-Triton version'
                                                      '</span>' if baseline else '') +
              '; numbers: machine instructions per target (those of Triton\'s library functions, such as tl.max, '
              'count in their region\'s bar, not on a line); a linked line number opens what the line compiled '
              'to</p>')
    return f'{legend}<div class="listings">{listings}</div>'


def _listing(counts: dict[str, dict[str, int]], targets: list[str], kind, owners: dict[str, str],
             anchors: dict[str, str], caption: str = "") -> str:
    """One table per source file of ``counts``' lines (``file:line`` -> target -> instructions),
    each row of class ``line-<kind(where)>``, its number linked to its drill-down entry."""
    files: dict[str, set[int]] = {}
    for where in filter(_shown, counts):
        path, _, number = where.rpartition(":")
        files.setdefault(path, set()).add(int(number))   # Triton's library lines count in their region
    head = "".join(f"<th>{escape(t)}</th>" for t in targets)
    tables = []
    for path, numbers in files.items():
        text = _lines_of(path)
        rows = []
        for start, end in _ranges(sorted(numbers)):
            if rows:
                rows.append(f'<tr><td class="n">…</td>{"<td></td>" * len(targets)}<td class="code"></td></tr>')
            for number in range(start, min(end, len(text)) + 1):
                where = f"{path}:{number}"
                owner = owners.get(where, "")
                cells = "".join(f'<td class="count">{counts.get(where, {}).get(t, "") or ""}</td>' for t in targets)
                n = f'<a href="#{anchors[where]}">{number}</a>' if where in anchors else str(number)
                own = f" own own-{_slug(owner)}" if owner else ""
                rows.append(f'<tr class="line-{kind(where)}{own}" title="{escape(owner)}"><td class="n">{n}</td>'
                            f'{cells}<td class="code">{escape(text[number - 1])}</td></tr>')
        tables.append(f'<table class="source"><caption>{escape(caption + Path(path).name)}</caption><tr><th>line</th>'
                      f'{head}<th></th></tr>{"".join(rows)}</table>')
    return f'<div class="listing">{"".join(tables)}</div>' if tables else ""


def _shown(where: str) -> bool:
    """Whether the listing shows ``file:line``: a line of a file here, not of Triton's library."""
    path, _, number = where.rpartition(":")
    return number.isdigit() and Path(path).is_file() and not Path(path).resolve().is_relative_to(_TRITON)


@functools.lru_cache(maxsize=64)
def _lines_of(path: str) -> list[str]:
    """A source file's lines, read once per page (``page`` clears the cache)."""
    return Path(path).read_text().splitlines()


def _line_key(where: str) -> tuple:
    path, _, number = where.rpartition(":")
    return path, int(number)


def _drilldown(title: str, per_target: list[tuple[str, list[dict], dict[str, LineCode]]],
               anchors: dict[str, str]) -> str:
    """Per source line (``anchors``: the lines the listing links), its ttgir ops and machine
    instructions on each target (``per_target``: the target, the report's lines, which name each
    line's owner, and the code of each line), one collapsed entry each, inside one collapsed
    block; following a line's link opens both (the browser reveals a fragment inside a closed
    ``<details>``)."""
    if not anchors:
        return ""
    owners = {line["where"]: line["owner"] for _, lines, _ in per_target for line in lines}
    items = []
    for where, anchor in anchors.items():
        path, _, number = where.rpartition(":")
        source = _lines_of(path)[int(number) - 1].strip()
        parts, figures = [], []
        for target, _, code in per_target:
            line = code.get(where, LineCode())
            machine = next((c.language for c in code.values() if c.language), "machine")
            figures.append(f"{target}: {len(line.ttgir)} ttgir, {len(line.machine)} {machine}")
            parts.append(f"<h4>{escape(target)}: {len(line.ttgir)} ttgir ops</h4><pre>"
                         f"{escape(chr(10).join(line.ttgir)) or '(none)'}</pre><h4>{escape(target)}: "
                         f"{len(line.machine)} {machine} instructions</h4><pre>"
                         f"{escape(chr(10).join(line.machine)) or '(none)'}</pre>")
        owner = owners.get(where, "")
        own = f" own own-{_slug(owner)}" if owner else ""
        items.append(f'<details class="drill{own}"><summary>{escape(Path(path).name)}:{number} '
                     f'<code>{escape(source)}</code> ({escape("; ".join(figures))})</summary>'
                     f'<div id="{anchor}">{"".join(parts)}</div></details>')
    return (f'<details class="drilldown"><summary><b>{escape(title)}</b> ({len(anchors)} lines: ttgir ops and '
            f'machine instructions per target)</summary>{"".join(items)}</details>')


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
    """Each boundary of ``rep``: its layouts before and after as grids, and what the move costs;
    the free ones (no conversion, no bytes) in one collapsed line."""
    boundaries = [b for row in rep["rows"] for b in row.get("boundaries", [])]
    if not boundaries:
        return ""
    warp_size = 64 if rep["target"].startswith("gfx") else 32
    num_warps = rep["totals"]["num_warps"] or 4
    free = [b for b in boundaries if _free(b)]
    items = "".join(_boundary(b, num_warps, warp_size) for b in boundaries if not _free(b))
    if free:
        names = ", ".join(f"r{b['region']} {b['direction']} {b['value']}" for b in free)
        items += (f'<details class="free"><summary>{len(free)} free boundar{"y" if len(free) == 1 else "ies"} '
                  f'(no conversion, no bytes moved): {escape(names)}</summary>'
                  f'{"".join(_boundary(b, num_warps, warp_size) for b in free)}</details>')
    return f'<h3>{escape(rep["target"])}: boundaries</h3><p class="notation">{escape(NOTATION)}</p>{items}'


def _free(b: dict) -> bool:
    return not b["conversions"] and not b.get("shared_bytes") and b.get("handoff") != "shared"


def _boundary(b: dict, num_warps: int, warp_size: int) -> str:
    """One boundary: what it moves and what that costs, and its layouts as grids (one grid when
    both sides have the same layout)."""
    sides = (("from", b["from_layout"]), ("to", b["to_layout"]))
    if b["from_layout"] == b["to_layout"]:
        sides = (("both sides", b["from_layout"]), )
    grids = "".join(f'<div>{escape(side)}: <abbr title="{escape(layout)}">{escape(short_layout(layout))}</abbr> '
                    f'<span class="notation">({escape(_spelled(layout))})</span><br>'
                    f"{_grid(layout, b, num_warps, warp_size)}</div>"
                    for side, layout in sides)
    return (f'<div class="boundary own own-r{b["region"]}"><p><b>r{b["region"]} {escape(b["direction"])} '
            f'{escape(b["value"])}</b> {escape("x".join(map(str, b["shape"])))} {escape(b["dtype"])}: '
            f'{escape(_cost(b))}</p><div class="grids">{grids}</div></div>')


def _spelled(layout: str) -> str:
    """A layout's parameters by name, in order (``sizePerThread [1, 4], threadsPerWarp [4, 8], ...``):
    what the short notation's lists are."""
    pairs = re.findall(r"(\w+) = (\[[^\]]*\]|[\w.]+)", layout)
    return ", ".join(f"{name} {value}" for name, value in pairs) or layout


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
    except NotDistributed:
        return "<i>(not drawn: a shared-memory layout, its elements held by no thread)</i>"
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
                         f'lane {t}</title></rect><text x="{j * CELL + CELL / 2 - 0.5:g}" y="{i * CELL + 15}">{t}'
                         f'</text>')
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
