"""Bundles: one kernel's binaries for several targets and a ``manifest.json``. JSON only, no pickle.

    <kernel>/manifest.json
    <kernel>/<kernel>.<target>.cubin | .hsaco              (or <kernel>.<target>.config<i>.cubin | .hsaco)
or the same files in one zip archive ``<kernel>.zip``. The manifest names the kernel, its launch
parameters in order, and per target: the file, its sha256 and what a launcher needs (entry
name, warps, warp size, shared memory, hidden trailing parameters, scratch sizes), plus
registers and spills where known and the Triton version that built it. A kernel built with
autotune configs lists them (``configs``: key and values, in the module's order) and holds one
such record per config under each target (``targets[t]["configs"][key]``, next to the target's
``isa``); the loader launches one of them, chosen by key.
"""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
FORMAT = 2          # 2: autotune configs; a format 1 bundle reads as one built without them
READS = (1, 2)
SUFFIX = {"cuda": "cubin", "hip": "hsaco"}
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)   # fixed timestamps: the same bundle gives the same archive bytes


def manifest(results: list) -> dict:
    """The manifest of one kernel's successful ``BuildResult``s (one per target, or per target
    and config)."""
    records = [r.entry.record for r in results]
    first = records[0]
    for r in records[1:]:
        if (r["kernel"], r["signature"]) != (first["kernel"], first["signature"]):
            raise ValueError(f"one bundle holds one kernel and signature; got {first['kernel']} and {r['kernel']} "
                             f"({first['signature']} vs {r['signature']})")
    if len({(r["target"], _config_key(r)) for r in records}) != len(records):
        raise ValueError(f"{first['kernel']}: two builds for the same target (and config) in one bundle")
    configs = {r["config"]["index"]: r["config"] for r in records if r.get("config")}
    if configs and len(configs) * len({r["target"] for r in records}) != len(records):
        raise ValueError(f"{first['kernel']}: a bundle holds every config for every target, or no configs")
    targets: dict[str, dict] = {}
    for r in records:
        entry = {"file": file_name(r), "sha256": r["sha256"], **r["launch"], "constexprs": r["constexprs"],
                 "options": r["options"], "triton_version": r["triton_version"]}
        if configs:
            slot = targets.setdefault(r["target"], {"isa": r["launch"]["isa"], "configs": {}})
            slot["configs"][_config_key(r)] = entry
        else:
            targets[r["target"]] = entry
    data = {"format": FORMAT, "kernel": first["kernel"], "source": source_name(first["ref"]),
            "params": [{"name": n, "type": t} for n, t in first["signature"].items()],
            "triton_version": first["triton_version"], "targets": targets}
    if configs:
        data["configs"] = [{"key": c["key"], "values": c["values"]} for _, c in sorted(configs.items())]
    return data


def source_name(ref: str) -> str:
    """The kernel's source as a bundle names it: a file by its name alone (a bundle travels; the
    build machine's folders mean nothing where it is loaded), a package module as given."""
    module, _, name = ref.rpartition(":")
    return f"{Path(module).name}:{name}" if module.endswith(".py") else ref


def file_name(record: dict) -> str:
    """``<kernel>.<target>[.config<i>].<cubin|hsaco>``."""
    config = f".config{record['config']['index']}" if record.get("config") else ""
    return f"{record['kernel']}.{record['target']}{config}.{SUFFIX[record['launch']['backend']]}"


def _config_key(record: dict) -> str | None:
    return record["config"]["key"] if record.get("config") else None


def write_bundle(results: list, path: str | Path, archive: bool = False) -> Path:
    """Write one kernel's results as a folder ``path`` (or ``path.zip`` with ``archive``)."""
    data = manifest(results)
    files = {MANIFEST: json.dumps(data, indent=1).encode() + b"\n"}
    files.update({file_name(r.entry.record): r.entry.binary for r in results})
    path = Path(path)
    if archive:
        path = path.with_suffix(".zip")
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(files):
                zf.writestr(zipfile.ZipInfo(name, _ZIP_EPOCH), files[name], zipfile.ZIP_DEFLATED)
        return path
    path.mkdir(parents=True, exist_ok=True)
    for old in path.iterdir():   # a rebuilt bundle must not keep a binary the new manifest dropped
        if old.is_file() and (old.name == MANIFEST or old.suffix[1:] in SUFFIX.values()):
            old.unlink()
    for name, content in files.items():
        (path / name).write_bytes(content)
    return path


def write_bundles(results: list, out_dir: str | Path, archive: bool = False) -> dict[str, Path]:
    """One bundle per kernel under ``out_dir`` from the successful results."""
    by_kernel: dict[str, list] = {}
    for r in results:
        if r.ok:
            by_kernel.setdefault(r.entry.record["kernel"], []).append(r)
    return {k: write_bundle(rs, Path(out_dir) / k, archive) for k, rs in by_kernel.items()}


@dataclass
class Bundle:
    path: Path
    manifest: dict

    def read(self, name: str) -> bytes:
        if self.path.is_dir():
            return (self.path / name).read_bytes()
        with zipfile.ZipFile(self.path) as zf:
            return zf.read(name)


def read_bundle(path: str | Path) -> Bundle:
    """Open a bundle folder or zip archive and check its manifest's format."""
    path = Path(path)
    try:
        if path.is_dir():
            raw = (path / MANIFEST).read_bytes()
        else:
            with zipfile.ZipFile(path) as zf:
                raw = zf.read(MANIFEST)
    except (FileNotFoundError, KeyError, zipfile.BadZipFile, IsADirectoryError) as exc:
        raise FileNotFoundError(f"{path}: not a bundle (no readable {MANIFEST}: {exc})") from None
    data = json.load(io.BytesIO(raw))
    if data.get("format") not in READS:
        raise ValueError(f"{path}: bundle format {data.get('format')!r}, this loader reads formats "
                         f"{', '.join(map(str, READS))}")
    return Bundle(path, data)
