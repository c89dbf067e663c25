"""The stitch still to do in one compile: the one record every pass of a pipeline takes.

A pass (``runner.Pass``) reads what it needs from here and leaves what a later pass reads here,
so what flows between passes is written down instead of passed around in locals of one long
function. The regions and their planned boundaries stay on the compile (``CompileContext``):
the splices extend and prune them while they build, and the records are encoded from there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .stitch import Folded


@dataclass
class Stitch:
    compile: object                   # the CompileContext: regions, planned boundaries, both splicers, scopes
    relayout: object | None = None    # a Triton host's relayout under way (``host_relayout.Relayout``)
    relaid: Folded = field(default_factory=Folded.nothing)   # what the host's relayout folded
    folded: Folded = field(default_factory=Folded.nothing)   # what the stitch's folds replaced so far
    choices: list = field(default_factory=list)   # the planner's choices (``planner.Choice``)
    live: dict = field(default_factory=dict)      # per boundary tag, the conversions left after planning
    merged_stagings: int = 0                      # stagings into shared memory merged (``stagings``)
    region_in_loop: bool = False                  # a region's call sat in a loop of the host (``inline``)

    @property
    def context(self):
        return self.compile.context

    @property
    def target(self):
        return self.compile.target

    @property
    def regions(self) -> list:
        return self.compile.regions

    @property
    def host_language(self) -> str:
        return self.compile.host_language
