"""What every benchmark script ends with: its JSON written where asked, and the path said."""
from __future__ import annotations

import json
from pathlib import Path


def write_json(path: str, data) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1))
    print(f"wrote {path}")
