"""Launch facts read from a built kernel, for the bundle manifest and the runtime loader.

The parameter count comes from the binary's own entry (PTX ``.entry`` / AMDGPU ``.args``), not
from a guess: Triton appends hidden trailing parameters (on 3.9 a global and a profile scratch
pointer, on both vendors) that a launcher must pass.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from interop.instrumentation.resources import registers_and_spills

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
    spills: int | None            # NVIDIA: local-memory bytes; AMD: VGPR + SGPR spill count

    def to_json(self) -> dict:
        return asdict(self)


def launch_info(fb, visible_params: int) -> LaunchInfo:
    """Facts about ``fb`` (a ``FusedBinary``) whose signature has ``visible_params`` runtime arguments."""
    md = fb.metadata
    if "ptx" in fb.asm:
        isa = re.search(r"^\.target\s+(\w+)", fb.asm["ptx"], re.M).group(1)
        entry = re.search(r"\.entry\s+" + re.escape(md["name"]) + r"\s*\((.*?)\)", fb.asm["ptx"], re.S)
        entry_params = entry.group(1).count(".param")
        registers, spills = registers_and_spills(fb.asm)
    else:
        isa = md["arch"]
        args = re.search(r"\.args:(.*?)\n\s*\.group_segment_fixed_size", fb.asm["amdgcn"], re.S)
        entry_params = args.group(1).count(".offset:") if args else 0
        registers, spills = registers_and_spills(fb.asm)
    if entry_params < visible_params:
        raise RuntimeError(f"{md['name']}: the binary's entry takes {entry_params} parameters, "
                           f"fewer than the signature's {visible_params}")
    return LaunchInfo(name=md["name"], backend=md["backend_name"], isa=isa, entry_params=entry_params,
                      hidden_params=entry_params - visible_params, registers=registers, spills=spills,
                      **{k: md.get(k, default) for k, default in _METADATA_DEFAULTS.items()})
