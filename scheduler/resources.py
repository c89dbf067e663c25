"""Launch facts read from a built kernel, for the bundle manifest and the runtime loader.

The parameter count comes from the binary's own entry (PTX ``.entry`` / AMDGPU ``.args``), not
from a guess: Triton appends hidden trailing parameters (on 3.9 a global and a profile scratch
pointer, on both vendors) that a launcher must pass.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ._triton import nvidia_tool

#: Triton metadata the loader needs, with the value that means "not used" where a backend or
#: release leaves a key out (AMD has no ``launch_pdl``).
_METADATA_DEFAULTS = {"num_warps": None, "num_ctas": 1, "warp_size": None, "shared": 0, "global_scratch_size": 0,
                      "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1,
                      "launch_cooperative_grid": False, "launch_pdl": False}


@dataclass
class LaunchInfo:
    name: str
    backend: str                  # "cuda" or "hip"
    isa: str                      # what the binary runs on: "sm_90a", "gfx942"
    entry_params: int             # parameters of the binary's kernel entry
    hidden_params: int            # trailing parameters beyond the signature (scratch pointers)
    num_warps: int
    num_ctas: int
    warp_size: int
    shared: int                   # dynamic shared memory (LDS) bytes to launch with
    global_scratch_size: int      # bytes per program; 0: the pointer may be null
    global_scratch_align: int
    profile_scratch_size: int
    profile_scratch_align: int
    launch_cooperative_grid: bool
    launch_pdl: bool
    registers: int | None         # per thread (NVIDIA registers, AMD VGPRs); None where not known
    spills: int | None            # NVIDIA: local bytes / 4, as Triton reports; AMD: VGPR + SGPR spills

    def to_json(self) -> dict:
        return asdict(self)


def launch_info(fb, visible_params: int) -> LaunchInfo:
    """Facts about ``fb`` (a ``FusedBinary``) whose signature has ``visible_params`` runtime arguments."""
    md = fb.metadata
    if "ptx" in fb.asm:
        isa = re.search(r"^\.target\s+(\w+)", fb.asm["ptx"], re.M).group(1)
        entry = re.search(r"\.entry\s+" + re.escape(md["name"]) + r"\s*\((.*?)\)", fb.asm["ptx"], re.S)
        entry_params = entry.group(1).count(".param")
        registers, spills = _cuda_resources(fb.binary)
    else:
        isa = md["arch"]
        args = re.search(r"\.args:(.*?)\n\s*\.group_segment_fixed_size", fb.asm["amdgcn"], re.S)
        entry_params = args.group(1).count(".offset:") if args else 0
        registers, spills = _amd_resources(fb.asm["amdgcn"])
    if entry_params < visible_params:
        raise RuntimeError(f"{md['name']}: the binary's entry takes {entry_params} parameters, "
                           f"fewer than the signature's {visible_params}")
    return LaunchInfo(name=md["name"], backend=md["backend_name"], isa=isa, entry_params=entry_params,
                      hidden_params=entry_params - visible_params, registers=registers, spills=spills,
                      **{k: md.get(k, default) for k, default in _METADATA_DEFAULTS.items()})


def _cuda_resources(cubin: bytes) -> tuple[int | None, int | None]:
    """Registers and spills from ``cuobjdump -res-usage`` (the ELF layout of the count moved
    between ptxas releases; the tool reads every one)."""
    tool = nvidia_tool("cuobjdump")
    if tool is None:
        return None, None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([str(tool), "-res-usage", str(path)], capture_output=True, text=True).stdout
    match = re.search(r"REG:(\d+).*?LOCAL:(\d+)", out)
    return (int(match.group(1)), int(match.group(2)) // 4) if match else (None, None)


def _amd_resources(amdgcn: str) -> tuple[int | None, int | None]:
    def field(name: str) -> int | None:
        match = re.search(rf"^\s*\.{name}:\s+(\d+)", amdgcn, re.M)
        return int(match.group(1)) if match else None
    spills = [field("vgpr_spill_count"), field("sgpr_spill_count")]
    return field("vgpr_count"), None if None in spills else sum(spills)
