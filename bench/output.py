"""What every benchmark script ends with: its tables printed, its JSON written where asked."""
from __future__ import annotations

import json
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
