"""Triton's MLIR bindings: parse, build, verify and run passes on tt/ttg IR."""
import re
import tempfile

from triton._C.libtriton import gluon_ir, ir, passes

__all__ = ["gluon_ir", "ir", "parse_module", "passes"]

#: An AMD MFMA attribute as Triton prints it: its warpsPerCTA (group 1) and, if printed, its tilesPerWarp.
_MFMA = re.compile(r"#ttg\.amd_mfma<\{version = \d+, warpsPerCTA = \[([\d, ]+)\][^}]*\}>")


def parse_module(text: str, context):
    """``text`` parsed into a module of ``context`` (the bindings parse files, not strings);
    raises RuntimeError where it does not parse.

    An MFMA attribute is parsed back as the one printed (``with_mfma_tiles_spelled``), so a
    module that went through text (a re-parse, the lowering cache) has the very attributes of
    the IR Triton's passes and Gluon's layouts build, and its values fit theirs."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(with_mfma_tiles_spelled(text))
        f.flush()
        module = ir.parse_mlir_module(f.name, context)
    module.context = context
    return module


def with_mfma_tiles_spelled(text: str) -> str:
    """``text`` with each ``#ttg.amd_mfma`` attribute that does not print its ``tilesPerWarp``
    (all ones) spelling it, one per dimension of ``warpsPerCTA``.

    Triton's MFMA attribute builder (its passes, Gluon's ``AMDMFMALayout``) defaults
    ``tilesPerWarp`` to ones per tensor dimension, its parser to ones per ``instrShape`` entry
    (three); the printer leaves all ones out. An attribute printed and parsed back thus prints
    the same but is another attribute, and MLIR compares types by identity: a region parsed
    from text no longer fits its host (``'tt.func' op type of entry block argument #0 ...
    must match the type of the corresponding argument in function signature``, the two types
    printing alike). Spelled out, the parser gives back the builder's attribute."""
    def spell(match: re.Match) -> str:
        attribute = match.group(0)
        if "tilesPerWarp" in attribute:
            return attribute
        ones = ", ".join("1" for _ in match.group(1).split(","))
        return f"{attribute[:-2]}, tilesPerWarp = [{ones}]}}>"

    return _MFMA.sub(spell, text)
