"""What every benchmark script ends with: its tables printed, its JSON written where asked."""
from __future__ import annotations

import json
import traceback
from pathlib import Path

from rich.table import Table


def write_json(path: str, data) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1))
    print(f"wrote {path}")


def table(title: str, columns: tuple[str, ...], rows) -> Table:
    """A ``rich`` table of text cells, one row per item of ``rows``."""
    out = Table(title=title)
    for column in columns:
        out.add_column(column)
    for cells in rows:
        out.add_row(*cells)
    return out


def flagged(cell: str) -> str:
    """A table cell as ``rich`` markup: its text escaped, a goal MISSED, a WRONG result and a
    FAILED version in red."""
    from rich.markup import escape
    out = escape(cell)
    for word in ("MISSED", "WRONG", "FAILED"):
        out = out.replace(word, f"[red]{word}[/]")
    return out


def attempt(step, *args):
    """``(step(*args), None)``, or ``(None, why)`` with the traceback printed: on a GPU one version
    that fails to build or launch is a row that says so, not a run that loses every measured row."""
    try:
        return step(*args), None
    except Exception as exc:   # noqa: BLE001 -- reported in the row and printed in full
        traceback.print_exc()
        first = str(exc).strip().splitlines()
        return None, f"{type(exc).__name__}: {first[0] if first else ''}"[:200]
