"""The project's version (``hybrid.__version__``), here so that a bundle's manifest can record it
without the scheduler importing the front end."""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path


def project_version() -> str:
    """The installed distribution's version, else (a checkout on ``PYTHONPATH``) pyproject's."""
    try:
        return metadata.version("triton-hybrid")
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.M) if pyproject.is_file() else None
        return found.group(1) if found else "0+unknown"
