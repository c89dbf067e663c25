"""Static resource figures of a compiled kernel, read from the binary the backend produced.

Registers and spills decide occupancy and are known before any launch: on NVIDIA from the
cubin (``cuobjdump --dump-resource-usage``, shipped in Triton's wheel), on AMD from the
kernel descriptor in the AMDGCN text. Works for hybrid and plain Triton kernels alike.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path


def resources(asm: dict, metadata) -> dict:
    """``registers``, ``spills`` (bytes on NVIDIA: local memory; count on AMD), ``shared_bytes``,
    ``binary_bytes`` and ``conversions`` (``ttg.convert_layout`` ops in the final ttgir)."""
    shared = metadata["shared"] if isinstance(metadata, dict) else metadata.shared
    binary = asm.get("cubin") or asm.get("hsaco")
    figures = {"shared_bytes": shared, "binary_bytes": len(binary),
               "conversions": asm["ttgir"].count("ttg.convert_layout ")}
    figures.update(_cubin_usage(binary) if "cubin" in asm else _amdgcn_usage(asm["amdgcn"]))
    return figures


def _cubin_usage(cubin: bytes) -> dict:
    from triton.backends.nvidia.compiler import get_ptxas
    cuobjdump = Path(get_ptxas(90).path).parent / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([str(cuobjdump), "--dump-resource-usage", f.name], capture_output=True, text=True,
                             check=True).stdout
    registers = re.search(r"REG:(\d+)", out)
    local = re.search(r"LOCAL:(\d+)", out)
    return {"registers": int(registers.group(1)) if registers else None,
            "spills": int(local.group(1)) if local else None}


def _amdgcn_usage(amdgcn: str) -> dict:
    def field(name: str) -> int | None:
        found = re.search(rf"\.{name}:\s+(\d+)", amdgcn)
        return int(found.group(1)) if found else None

    spills = [field("vgpr_spill_count"), field("sgpr_spill_count")]
    return {"registers": field("vgpr_count"), "spills": None if None in spills else sum(spills)}
