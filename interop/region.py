"""Records of the regions of a mixed kernel: who calls what, where, in which language."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CallSite:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @classmethod
    def of(cls, generator) -> "CallSite":
        """Where the code generator ``generator`` is in its function's source."""
        return cls(generator.file_name, generator.begin_line + generator.cur_node.lineno)

    @classmethod
    def parse(cls, text: str) -> "CallSite":
        file, _, line = text.rpartition(":")
        return cls(file, int(line))


@dataclass(frozen=True)
class Region:
    """One call from a host kernel into a function of the other language.

    ``symbol`` is the private function that holds the region's lowered body in the host
    module until it is inlined; ``specialization`` identifies the argument types and
    constexprs it was lowered for (one lowering serves all call sites with the same one).
    """
    index: int
    function: str
    language: str
    call_site: CallSite
    symbol: str
    specialization: str
    shared_bytes: int = 0   # shared memory its own code allocates (buffers, pipelining stages)
    lines: tuple = ()       # "file:line" of every op of its lowering: where its instructions come from

    def to_json(self) -> dict:
        return {"index": self.index, "function": self.function, "language": self.language,
                "call_site": str(self.call_site), "symbol": self.symbol, "specialization": self.specialization,
                "shared_bytes": self.shared_bytes, "lines": sorted(self.lines)}

    @classmethod
    def from_json(cls, data: dict) -> "Region":
        return cls(**{**data, "call_site": CallSite.parse(data["call_site"]), "lines": tuple(data["lines"])})
