"""What a bundle's manifest may say, checked before the loader acts on any of it, and what each
GPU architecture allows (ELF header, warp size, threads and shared memory per CTA).

A manifest comes from whoever handed over the bundle, so every key is checked for presence, type
and range, and every failure names the key and what is allowed (``ManifestError``) instead of
surfacing later as a ``KeyError`` or a launch with 2**40 warps. The binary itself is checked
against the entry's ``isa``: a cubin is ELF machine 190 (EM_CUDA) and an AMD code object 224
(EM_AMDGPU), and each records its architecture in ``e_flags``, so a gfx942 code object relabelled
``sm_90a`` is refused. This module imports neither Triton nor the compiler (the loader reads it).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from . import kernel_elf

FORMATS = (1, 2, 3)   # 2: autotune configs; 3: what a signature binds (``SIGNED_KEYS``)
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\.(cubin|hsaco)")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SHA256 = re.compile(r"[0-9a-f]{64}")
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}")
MAX_THREADS_PER_CTA = 1024
MAX_SIZE = 1 << 40           # scratch bytes and alignments: anything above is not a real kernel's
MAX_PARAMS, MAX_CONFIGS, MAX_TARGETS = 1024, 1024, 64   # list lengths no real bundle comes near
MAX_HIDDEN = 2               # Triton's trailing scratch pointers: global, then profile
#: bytes of a parameter of each Triton type (a pointer, ``*T`` or ``*kT``, is 8), as the binary
#: lays it out; the names are ``interop.entry.request.SCALAR_TYPES`` (a test keeps them equal)
PARAM_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u1": 1, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
               "fp8e4nv": 1, "fp8e4b8": 1, "fp8e5": 1, "fp8e5b16": 1, "fp8e4b15": 1, "fp16": 2, "bf16": 2, "fp32": 4,
               "fp64": 8}
POINTER_BYTES = 8
#: top-level keys of a format 3 manifest that a signature binds besides kernel, targets and
#: triton_version: the kernel's source (``JITFunction.cache_key``) and the project's version
SIGNED_KEYS = ("source_sha256", "hybrid_version")
EM_CUDA, EM_AMDGPU = 190, 224


class BundleError(RuntimeError):
    """A bundle that cannot be used here."""


class ManifestError(BundleError, ValueError):
    """A manifest that does not follow the bundle format (a key missing, of the wrong type or out of range)."""


class UntrustedBundle(BundleError):
    """A bundle that is unsigned, signed by a key not trusted here, or edited after signing."""


@dataclass(frozen=True)
class Isa:
    """One architecture a bundle binary may be built for."""
    backend: str        # "cuda" or "hip"
    machine: int        # ELF e_machine
    arch: int           # the architecture number in e_flags: the SM (90) or AMD's EF_AMDGPU_MACH
    warp_size: int
    shared_limit: int   # bytes of shared memory (LDS) one CTA may use


def _cuda(sm: int, shared: int) -> Isa:
    return Isa("cuda", EM_CUDA, sm, 32, shared)


#: Per-CTA shared memory as in ``interop.targets.arch`` (tests/test_bundle_trust.py keeps them equal).
ISAS: dict[str, Isa] = {
    "sm_80": _cuda(80, 166912), "sm_86": _cuda(86, 101376), "sm_89": _cuda(89, 101376),
    "sm_90": _cuda(90, 232448), "sm_90a": _cuda(90, 232448), "sm_100": _cuda(100, 232448),
    "sm_100a": _cuda(100, 232448), "sm_120": _cuda(120, 101376),
    "gfx942": Isa("hip", EM_AMDGPU, 0x4C, 64, 65536), "gfx950": Isa("hip", EM_AMDGPU, 0x4F, 64, 163840),
}
PARAM_TYPE = re.compile(r"(\*k?)?(" + "|".join(PARAM_BYTES) + ")")
_MACHINES = {EM_CUDA: "a CUDA cubin (EM_CUDA)", EM_AMDGPU: "an AMD code object (EM_AMDGPU)"}


class _Checker:
    """Reads values out of the manifest, raising ``ManifestError`` with the key's path."""

    def __init__(self, origin: str):
        self.origin = origin

    def fail(self, where: str, allowed: str, value=...) -> ManifestError:
        got = "it is missing" if value is ... else f"got {_short(value)}"
        return ManifestError(f"{self.origin}: manifest key '{where}' must be {allowed}; {got}")

    def get(self, data: dict, where: str, key: str, kind, allowed: str, optional: bool = False):
        path = f"{where}.{key}" if where else key
        if key not in data:
            if optional:
                return None
            raise self.fail(path, allowed)
        value = data[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):   # True is an int
            raise self.fail(path, allowed, value)
        return value

    def text(self, data, where, key, pattern: re.Pattern | None = None, allowed: str = "a string", **kw):
        value = self.get(data, where, key, str, allowed, **kw)
        if value is not None and pattern is not None and not pattern.fullmatch(value):
            raise self.fail(f"{where}.{key}" if where else key, allowed, value)
        return value

    def integer(self, data, where, key, low: int, high: int, optional: bool = False):
        allowed = f"an integer from {low} to {high}"
        value = self.get(data, where, key, int, allowed, optional)
        if value is not None and not low <= value <= high:
            raise self.fail(f"{where}.{key}", allowed, value)
        return value

    def bounded(self, data, where, key, most: int, allowed: str, optional: bool = False) -> list | None:
        value = self.get(data, where, key, list, allowed, optional)
        if value is not None and len(value) > most:
            raise ManifestError(f"{self.origin}: manifest key '{f'{where}.{key}' if where else key}' must be {allowed} "
                                f"of at most {most} items; got {len(value)}")
        return value

    def mapping(self, data, where, key, optional: bool = False) -> dict | None:
        return self.get(data, where, key, dict, "an object ({...})", optional)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(data, origin: str) -> dict:
    """``data`` (parsed ``manifest.json``) if it follows the bundle format; else ``ManifestError``."""
    check = _Checker(origin)
    if not isinstance(data, dict):
        raise check.fail("(top level)", "an object ({...})", data)
    if data.get("format") not in FORMATS:
        raise ManifestError(f"{origin}: bundle format {_short(data.get('format'))}, this loader reads formats "
                            f"{', '.join(map(str, FORMATS))}")
    check.text(data, "", "kernel", NAME, "a Python identifier")
    if data["format"] >= 3:
        check.text(data, "", "source_sha256", SHA256, "64 lowercase hex digits")
        check.text(data, "", "hybrid_version", VERSION, "a version (1.2.3)")
        check.text(data, "", "triton_version", VERSION, "a version (1.2.3)")
    params = check.bounded(data, "", "params", MAX_PARAMS, "a list of {name, type}")
    for i, param in enumerate(params):
        if not isinstance(param, dict):
            raise check.fail(f"params[{i}]", "an object {name, type}", param)
        check.text(param, f"params[{i}]", "name", NAME, "a Python identifier")
        check.text(param, f"params[{i}]", "type", PARAM_TYPE, f"a Triton type ({', '.join(PARAM_BYTES)}, or * "
                                                              "before one for a pointer)")
    configs = check.bounded(data, "", "configs", MAX_CONFIGS, "a list of {key, values}", optional=True) or []
    keys = []
    for i, config in enumerate(configs):
        if not isinstance(config, dict):
            raise check.fail(f"configs[{i}]", "an object {key, values}", config)
        keys.append(check.text(config, f"configs[{i}]", "key"))
        check.mapping(config, f"configs[{i}]", "values")
    targets = check.mapping(data, "", "targets")
    if not targets or len(targets) > MAX_TARGETS:
        raise check.fail("targets", f"an object with one entry per target (at most {MAX_TARGETS})", targets)
    for name, target in targets.items():
        where = f"targets.{name}"
        if not isinstance(target, dict):
            raise check.fail(where, "an object ({...})", target)
        if not keys:
            _entry(check, target, where, len(params))
            continue
        isa = check.text(target, where, "isa", allowed=f"one of {', '.join(ISAS)}")
        entries = check.mapping(target, where, "configs")
        if sorted(entries) != sorted(keys):
            raise check.fail(f"{where}.configs", f"one entry per config ({'; '.join(keys)})", sorted(entries))
        for key, entry in entries.items():
            if not isinstance(entry, dict):
                raise check.fail(f"{where}.configs.{key}", "an object ({...})", entry)
            if _entry(check, entry, f"{where}.configs.{key}", len(params)) != isa:
                raise check.fail(f"{where}.configs.{key}.isa", f"the target's isa {isa!r}", entry["isa"])
    return data


def _entry(check: _Checker, entry: dict, where: str, params: int) -> str:
    """Check one binary's record (for a kernel of ``params`` parameters); returns its ``isa``."""
    check.text(entry, where, "file", FILE_NAME, "a file name in the bundle (<name>.cubin or .hsaco, no folders)")
    check.text(entry, where, "sha256", SHA256, "64 lowercase hex digits")
    check.text(entry, where, "name", NAME, "the kernel's entry name (an identifier)")
    isa_name = check.text(entry, where, "isa", allowed=f"one of {', '.join(ISAS)}")
    isa = ISAS.get(isa_name)
    if isa is None:
        raise check.fail(f"{where}.isa", f"one of {', '.join(ISAS)}", isa_name)
    backend = check.text(entry, where, "backend", allowed=f"'{isa.backend}' (isa {isa_name})")
    if backend != isa.backend:
        raise check.fail(f"{where}.backend", f"'{isa.backend}' (isa {isa_name})", backend)
    warp_size = check.integer(entry, where, "warp_size", isa.warp_size, isa.warp_size)
    check.integer(entry, where, "num_warps", 1, MAX_THREADS_PER_CTA // warp_size)
    check.integer(entry, where, "num_ctas", 1, 16)
    check.integer(entry, where, "shared", 0, isa.shared_limit)
    hidden = check.integer(entry, where, "hidden_params", 0, MAX_HIDDEN)
    check.integer(entry, where, "entry_params", params + hidden, params + hidden)
    for key in ("global_scratch_size", "profile_scratch_size"):
        check.integer(entry, where, key, 0, MAX_SIZE)
    for key in ("global_scratch_align", "profile_scratch_align"):
        check.integer(entry, where, key, 1, MAX_SIZE)
    for key in ("launch_cooperative_grid", "launch_pdl"):
        check.get(entry, where, key, bool, "true or false")
    return isa_name


def check_binary(binary: bytes, entry: dict, origin: str, params: list | None = None) -> None:
    """Refuse a binary that is not an ELF file for the entry's ``isa`` (machine and architecture),
    or that contradicts its record: the entry symbol not defined in it, or (where the binary
    records them, ``kernel_elf``) another parameter count or size, for the manifest's ``params``
    and the entry's hidden ones, another CTA size or another cluster size than ``num_ctas``."""
    isa = ISAS[entry["isa"]]
    where = f"{origin}: {entry['file']}"
    if len(binary) < 64 or binary[:4] != b"\x7fELF" or binary[4] != 2 or binary[5] != 1:
        raise BundleError(f"{where} is not a 64-bit little-endian ELF file; the bundle is damaged, rebuild it")
    machine = struct.unpack_from("<H", binary, 18)[0]
    if machine != isa.machine:
        raise BundleError(f"{where} is {_MACHINES.get(machine, f'ELF machine {machine}')}, but the manifest says "
                          f"isa {entry['isa']}, which needs {_MACHINES[isa.machine]}; the bundle was mislabelled")
    arch = elf_arch(binary)
    if arch != isa.arch:
        raise BundleError(f"{where} is built for {arch_name(isa.backend, arch)}, but the manifest says isa "
                          f"{entry['isa']}; the bundle was mislabelled")
    if "name" not in entry:   # a bare ``{isa, file}`` record: the header checks only
        return
    try:
        symbols = kernel_elf.function_symbols(binary)
        info = kernel_elf.kernel_info(binary, entry["name"]) if entry["name"] in symbols else None
    except kernel_elf.ElfError as exc:
        raise BundleError(f"{where} is not a readable ELF file ({exc}); the bundle is damaged, rebuild it") from None
    if entry["name"] not in symbols:
        have = ", ".join(sorted(symbols)[:8]) or "none"
        raise BundleError(f"{where} defines no kernel {entry['name']!r} (the manifest's entry name); it defines: "
                          f"{have}; the manifest was edited")
    if info is not None:
        _check_declared(info, entry, params, where)


def _check_declared(info: kernel_elf.KernelInfo, entry: dict, params: list | None, where: str) -> None:
    """The manifest's launch facts against what the binary declares about its entry."""
    sizes = info.param_sizes
    if len(sizes) != entry["entry_params"]:
        raise BundleError(f"{where}: {entry['name']} takes {len(sizes)} parameters, but the manifest says "
                          f"{entry['entry_params']} ({entry['hidden_params']} hidden); the manifest was edited")
    if params is not None:
        expected = [param_bytes(p["type"]) for p in params] + [POINTER_BYTES] * entry["hidden_params"]
        for i, (declared, size) in enumerate(zip(expected, sizes)):
            if declared != size:
                what = f"parameter {i} ({params[i]['name']}: {params[i]['type']})" if i < len(params) else \
                    f"hidden parameter {i - len(params)}"
                raise BundleError(f"{where}: {what} is {size} bytes in the binary, but the manifest's type is "
                                  f"{declared} bytes; the manifest was edited")
    threads = entry["warp_size"] * entry["num_warps"]
    if info.threads is not None and info.threads != threads:
        raise BundleError(f"{where}: {entry['name']} is built for {info.threads} threads per CTA, but the manifest "
                          f"says {entry['num_warps']} warps of {entry['warp_size']}; the manifest was edited")
    if (info.cluster or 1) != entry["num_ctas"]:
        raise BundleError(f"{where}: {entry['name']} is built for {info.cluster or 1} CTA(s) per cluster, but the "
                          f"manifest says num_ctas {entry['num_ctas']}; the manifest was edited")


def param_bytes(kind: str) -> int:
    """The bytes of a parameter of Triton type ``kind`` (one ``PARAM_TYPE`` matches)."""
    return POINTER_BYTES if kind.startswith("*") else PARAM_BYTES[kind]


def elf_arch(binary: bytes) -> int:
    """The architecture number in an ELF header's ``e_flags``: the SM of a cubin (bits 0-7 in
    CUDA's ELF ABI version 7, bits 8-15 in version 8, which ptxas writes for sm_90a and later),
    AMD's ``EF_AMDGPU_MACH`` (bits 0-7) for a code object."""
    flags = struct.unpack_from("<I", binary, 48)[0]
    machine = struct.unpack_from("<H", binary, 18)[0]
    if machine == EM_CUDA and binary[8] >= 8:
        return (flags >> 8) & 0xFF
    return flags & 0xFF


def arch_name(backend: str, arch: int) -> str:
    if backend == "cuda":
        return f"sm_{arch}"
    return next((name for name, isa in ISAS.items() if isa.backend == "hip" and isa.arch == arch),
                f"EF_AMDGPU_MACH {arch:#x}")
