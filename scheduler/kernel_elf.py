"""What a bundle binary says about its kernel, read from the ELF file itself (pure Python, every
offset bounds-checked): the entry symbols it defines and, per entry, its parameters' sizes in
order, its threads per CTA and its cluster size.

A cubin records these in its ``.nv.info.<entry>`` section, a list of ``EIATTR`` attributes as
``cuobjdump -elf`` prints them (each a format byte, a code byte and two bytes: the value, or
the size of the value that follows): one ``KPARAM_INFO`` per parameter (ordinal, offset, size in bits
18-31 of its last word), ``REQNTID`` (the block's x, y, z threads) and, for a cluster launch,
``CTA_PER_CLUSTER``. An AMD code object records them in its ``NT_AMDGPU_METADATA`` note, a
msgpack map whose ``amdhsa.kernels`` list gives each kernel's ``.args`` (size and value kind;
the ``hidden_*`` kinds are the runtime's own, not the kernel's parameters) and
``.max_flat_workgroup_size``. ``manifest_schema.check_binary`` holds the manifest to them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

SHT_SYMTAB, SHT_NOTE, SHT_DYNSYM = 2, 7, 11
STT_FUNC, STT_OBJECT = 2, 1
NT_AMDGPU_METADATA = 32
MAX_SECTIONS = 1 << 16
#: cubin ``EIATTR`` attribute codes (the order of NVIDIA's enum, as cuobjdump names them)
EIATTR_REQNTID, EIATTR_KPARAM_INFO, EIATTR_CTA_PER_CLUSTER = 0x10, 0x17, 0x3D
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4


class ElfError(ValueError):
    """A binary whose ELF structure does not hold together (an offset past the end, a loop)."""


@dataclass(frozen=True)
class KernelInfo:
    """One entry as its binary declares it."""
    param_sizes: tuple[int, ...]     # bytes of each parameter the kernel itself takes, in order
    threads: int | None              # threads per CTA it was built for (None: not recorded)
    cluster: int | None              # CTAs per cluster (None: not a cluster kernel)


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


def _unpack(fmt: str, data: bytes, offset: int) -> tuple:
    if offset < 0 or offset + struct.calcsize(fmt) > len(data):
        raise ElfError(f"a field at byte {offset} lies past the end of the file")
    return struct.unpack_from(fmt, data, offset)


def _string(data: bytes, offset: int) -> str:
    if not 0 <= offset < len(data):
        raise ElfError(f"a name at byte {offset} lies past the end of the file")
    end = data.find(b"\0", offset)
    return data[offset:end if end >= 0 else len(data)].decode("utf-8", "replace")


def _sections(binary: bytes) -> list[_Section]:
    shoff = _unpack("<Q", binary, 0x28)[0]
    entsize, count, names = _unpack("<HHH", binary, 0x3A)
    if count > MAX_SECTIONS or (count and entsize < 64):
        raise ElfError(f"{count} section headers of {entsize} bytes")
    raw = [_unpack("<IIQQQQIIQQ", binary, shoff + i * entsize) for i in range(count)]
    if count and names >= count:
        raise ElfError(f"the section name table is section {names} of {count}")
    table = raw[names][4] if count else 0
    sections = []
    for name, kind, _, _, offset, size, link, *_ in raw:
        if kind != 8 and offset + size > len(binary):   # 8: SHT_NOBITS, which occupies no bytes
            raise ElfError(f"a section of {size} bytes at {offset} lies past the end of the file")
        sections.append(_Section(_string(binary, table + name), kind, offset, size, link))
    return sections


def _body(binary: bytes, section: _Section) -> bytes:
    return binary[section.offset:section.offset + section.size] if section.type != 8 else b""


def function_symbols(binary: bytes) -> set[str]:
    """The names of the functions (and, for AMD, kernel descriptor objects) the binary defines."""
    sections = _sections(binary)
    found = set()
    for table in sections:
        if table.type not in (SHT_SYMTAB, SHT_DYNSYM) or table.link >= len(sections):
            continue
        names, body = sections[table.link], _body(binary, table)
        for offset in range(0, len(body) - 23, 24):
            name, info, _, shndx = struct.unpack_from("<IBBH", body, offset)
            if info & 0xF in (STT_FUNC, STT_OBJECT) and shndx != 0:
                found.add(_string(binary, names.offset + name))
    return found


def kernel_info(binary: bytes, entry: str) -> KernelInfo | None:
    """What the binary declares about kernel ``entry``; None where it records nothing readable
    (a cubin without ``.nv.info.<entry>``, a code object without metadata for it)."""
    sections = _sections(binary)
    if _unpack("<H", binary, 18)[0] == 190:   # EM_CUDA
        info = next((s for s in sections if s.name == f".nv.info.{entry}"), None)
        return None if info is None else _cubin_info(_body(binary, info))
    for note in (s for s in sections if s.type == SHT_NOTE):
        metadata = _amdgpu_metadata(_body(binary, note))
        if metadata is not None:
            return _hsaco_info(metadata, entry)
    return None


def _cubin_info(body: bytes) -> KernelInfo:
    params: dict[int, int] = {}
    threads = cluster = None
    offset = 0
    while offset + 2 <= len(body):
        form, attribute = body[offset], body[offset + 1]
        if form == EIFMT_SVAL:
            size = _unpack("<H", body, offset + 2)[0]
            value, offset = body[offset + 4:offset + 4 + size], offset + 4 + size
        elif form in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):   # a 4-byte record: format, attribute, 2 bytes
            value, offset = body[offset + 2:offset + 4], offset + 4
        else:
            raise ElfError(f"unknown .nv.info attribute format {form}")
        if attribute == EIATTR_KPARAM_INFO and len(value) >= 12:
            _, ordinal, _, flags = struct.unpack_from("<IHHI", value)
            params[ordinal] = flags >> 18 & 0x3FFF
        elif attribute in (EIATTR_REQNTID, EIATTR_CTA_PER_CLUSTER) and len(value) >= 12:
            x, y, z = struct.unpack_from("<III", value)
            if attribute == EIATTR_REQNTID:
                threads = x * y * z
            else:
                cluster = x * y * z
    if sorted(params) != list(range(len(params))):
        raise ElfError(f"parameter ordinals {sorted(params)} are not 0..{len(params) - 1}")
    return KernelInfo(tuple(params[i] for i in range(len(params))), threads, cluster)


def _amdgpu_metadata(body: bytes):
    """The decoded msgpack of the ``NT_AMDGPU_METADATA`` note in ``body`` (a note section), if any."""
    offset = 0
    while offset + 12 <= len(body):
        namesz, descsz, kind = struct.unpack_from("<III", body, offset)
        name_at = offset + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        end = desc_at + (descsz + 3) // 4 * 4
        if desc_at + descsz > len(body):
            raise ElfError("a note lies past the end of its section")
        if kind == NT_AMDGPU_METADATA and body[name_at:name_at + namesz].rstrip(b"\0") == b"AMDGPU":
            return _Msgpack(body[desc_at:desc_at + descsz]).read()
        offset = end
    return None


def _hsaco_info(metadata, entry: str) -> KernelInfo | None:
    kernels = metadata.get("amdhsa.kernels") if isinstance(metadata, dict) else None
    for kernel in kernels if isinstance(kernels, list) else []:
        if isinstance(kernel, dict) and kernel.get(".name") == entry:
            args = [a for a in kernel.get(".args") or [] if isinstance(a, dict)]
            sizes = tuple(a.get(".size") for a in args if not str(a.get(".value_kind", "")).startswith("hidden_"))
            if not all(isinstance(s, int) for s in sizes):
                raise ElfError(f"{entry}'s metadata gives an argument without a size")
            threads = kernel.get(".max_flat_workgroup_size")
            return KernelInfo(sizes, threads if isinstance(threads, int) else None, None)
    return None


class _Msgpack:
    """Just enough msgpack for AMD's metadata note (maps, arrays, strings, integers, booleans,
    binary data), with the nesting and every length bounded by the note itself."""
    MAX_DEPTH = 32

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def _take(self, count: int) -> bytes:
        if count < 0 or self.at + count > len(self.data):
            raise ElfError("the AMDGPU metadata note ends inside a value")
        out = self.data[self.at:self.at + count]
        self.at += count
        return out

    def _int(self, fmt: str) -> int:
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def read(self, depth: int = 0):
        if depth > self.MAX_DEPTH:
            raise ElfError("the AMDGPU metadata note nests too deeply")
        tag = self._take(1)[0]
        if tag <= 0x7F or tag >= 0xE0:
            return tag if tag <= 0x7F else tag - 0x100
        if 0x80 <= tag <= 0x8F or tag in (0xDE, 0xDF):
            count = tag & 0x0F if tag <= 0x8F else self._int(">H" if tag == 0xDE else ">I")
            return {self._key(depth): self.read(depth + 1) for _ in range(count)}
        if 0x90 <= tag <= 0x9F or tag in (0xDC, 0xDD):
            count = tag & 0x0F if tag <= 0x9F else self._int(">H" if tag == 0xDC else ">I")
            if count > len(self.data):
                raise ElfError("the AMDGPU metadata note lists more values than it has bytes")
            return [self.read(depth + 1) for _ in range(count)]
        if 0xA0 <= tag <= 0xBF or tag in (0xD9, 0xDA, 0xDB):
            count = tag & 0x1F if tag <= 0xBF else self._int({0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}[tag])
            return self._take(count).decode("utf-8", "replace")
        if tag in (0xC4, 0xC5, 0xC6):
            return self._take(self._int({0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}[tag]))
        fixed = {0xC0: None, 0xC2: False, 0xC3: True}
        if tag in fixed:
            return fixed[tag]
        numbers = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
                   0xCA: ">f", 0xCB: ">d"}
        if tag in numbers:
            return self._int(numbers[tag])
        raise ElfError(f"msgpack tag {tag:#x} in the AMDGPU metadata note is not one AMD writes")

    def _key(self, depth: int):
        key = self.read(depth + 1)
        if isinstance(key, (dict, list)):
            raise ElfError("the AMDGPU metadata note has a map key that is not a string")
        return key
