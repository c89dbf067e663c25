"""Static resource figures of a compiled kernel, read from the binary the backend produced.

Registers and spills decide occupancy and are known before any launch: on NVIDIA from the
cubin (``cuobjdump --dump-resource-usage``, shipped in Triton's wheel), on AMD from the
kernel descriptor in the AMDGCN text. Works for hybrid and plain Triton kernels alike.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import threading

from interop import caches
from interop.triton import compat

#: What each tool printed for a cubin: (tool, flags, the cubin's digest) -> the output, the newest
#: last. A port, its report and its tests read one binary's figures several times; each read is a
#: process start (about 0.3 s).
_OUTPUTS: dict[tuple, str | None] = {}
_KEPT = 32
_LOCK = threading.Lock()
caches.register(_OUTPUTS.clear)


def resources(asm: dict, metadata) -> dict:
    """``registers``, ``spills`` (NVIDIA: local-memory bytes; AMD: spill count), ``shared_bytes``,
    ``binary_bytes`` and ``conversions`` (``ttg.convert_layout`` ops in the final ttgir)."""
    shared = metadata["shared"] if isinstance(metadata, dict) else metadata.shared
    registers, spills = registers_and_spills(asm)
    return {"registers": registers, "spills": spills, "shared_bytes": shared,
            "binary_bytes": len(asm.get("cubin") or asm["hsaco"]), "conversions": asm["ttgir"].count("ttg.convert_layout ")}


def layout_conversions(ttgir: str) -> int:
    """``ttg.convert_layout`` ops of ``ttgir`` between two different layouts (a conversion to the
    layout a value already has lowers to nothing): what a kernel converts, boundary or not."""
    aliases = dict(re.findall(r"^(#\w+) = (#.*)$", ttgir, re.M))
    pairs = re.findall(r"ttg\.convert_layout .*: tensor<[^,]+, (#[\w.]+(?:<.*?>)?)> -> tensor<[^,]+, (#[\w.]+(?:<.*?>)?)>",
                       ttgir)
    return sum(aliases.get(a, a) != aliases.get(b, b) for a, b in pairs)


def instructions(asm: dict) -> int | None:
    """Machine instructions in the kernel: SASS from the cubin (``cuobjdump -sass``, NOPs of the
    padding left out) on NVIDIA, AMDGCN instructions of the assembly text on AMD; None where
    ``cuobjdump`` is missing."""
    if "cubin" not in asm:
        return len(re.findall(r"^\s+(?:s_|v_|ds_|global_|buffer_|flat_|scratch_|exp\b)", asm["amdgcn"], re.M))
    out = _run_tool(asm["cubin"], "-sass")
    if out is None:
        return None
    return len([op for op in _SASS.findall(out) if op != "NOP"])


#: A SASS instruction as cuobjdump and nvdisasm print it (``/*0040*/  @!P0 BRA ...``): its opcode.
_SASS = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][\w.]*)", re.M)
_SASS_LINE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)', re.M)


def sass_lines(cubin: bytes) -> list[str | None] | None:
    """The source ``file:line`` of each SASS instruction ``instructions`` counts (NOPs left out), in
    order, from the cubin's line info (``nvdisasm -g``; None for one before any line); None where
    nvdisasm is missing. Counted per line, they add up to ``instructions``."""
    found = sass_instructions(cubin)
    return None if found is None else [where for where, _ in found]


def sass_instructions(cubin: bytes) -> list[tuple[str | None, str]] | None:
    """Each SASS instruction ``instructions`` counts, in order, with its source ``file:line``
    (``sass_lines``) and its text; None where nvdisasm is missing."""
    out = _run_tool(cubin, "-g", "-c", tool="nvdisasm")
    if out is None:
        return None
    found, where = [], None
    for text in out.splitlines():
        if line := _SASS_LINE.match(text):
            where = f"{line.group(1)}:{line.group(2)}"
        elif (op := _SASS.match(text)) and op.group(1) != "NOP":
            found.append((where, re.sub(r"^\s*/\*[0-9a-f]+\*/\s*|\s*/\*[0-9a-f]+\*/\s*$", "", text).strip()))
    return found


def _run_tool(cubin: bytes, *flags: str, tool: str = "cuobjdump") -> str | None:
    """What a CUDA tool of Triton's wheel prints for ``cubin``; None where it is missing."""
    key = (tool, flags, hashlib.sha256(cubin).hexdigest())
    with _LOCK:
        if key in _OUTPUTS:
            return _OUTPUTS[key]
    out = _printed(cubin, flags, tool)
    with _LOCK:
        while len(_OUTPUTS) >= _KEPT:
            _OUTPUTS.pop(next(iter(_OUTPUTS)))
        _OUTPUTS[key] = out
    return out


def _printed(cubin: bytes, flags: tuple[str, ...], tool: str) -> str | None:
    path = compat.nvidia_tool(tool)
    if path is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([str(path), *flags, f.name], capture_output=True, text=True).stdout


def registers_and_spills(asm: dict) -> tuple[int | None, int | None]:
    """Per-thread registers (NVIDIA registers, AMD VGPRs) and spills; None where not known."""
    return _cubin_usage(asm["cubin"]) if "cubin" in asm else _amdgcn_usage(asm["amdgcn"])


def _cubin_usage(cubin: bytes) -> tuple[int | None, int | None]:
    out = _run_tool(cubin, "--dump-resource-usage")
    if out is None:
        return None, None
    match = re.search(r"REG:(\d+).*?LOCAL:(\d+)", out, re.S)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _amdgcn_usage(amdgcn: str) -> tuple[int | None, int | None]:
    def field(name: str) -> int | None:
        found = re.search(rf"^\s*\.{name}:\s+(\d+)", amdgcn, re.M)
        return int(found.group(1)) if found else None

    spills = [field("vgpr_spill_count"), field("sgpr_spill_count")]
    return field("vgpr_count"), None if None in spills else sum(spills)
