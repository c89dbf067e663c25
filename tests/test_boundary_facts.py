"""The typed facts of a boundary: its tag (``BoundaryTag``), what folding did to it (``Folding``,
``Moved``, ``stitch.Folded``) and the reason each fact gives (``boundaries/reasons.py``)."""
import pytest

from interop.boundaries import reasons
from interop.boundary import TAG, BoundaryTag, Folding, Moved, PlannedBoundary
from interop.stitching.stitch import Folded


@pytest.mark.parametrize("tag", [BoundaryTag(0, "in", 0), BoundaryTag(3, "out", 12)])
def test_a_boundary_tag_reads_back_what_it_writes(tag):
    assert BoundaryTag.parse(tag.text) == tag and tag.text == f"{tag.region}:{tag.direction}:{tag.index}"


def test_a_planned_boundary_is_tagged_as_its_tag_writes():
    planned = PlannedBoundary(2, "f", "out", 1, "return[1]", (16, ), "f32", "#a", "#b", agree=False)
    assert BoundaryTag.parse(planned.tag) == BoundaryTag(2, "out", 1)


@pytest.mark.parametrize("text", ["0:sideways:1", "0:in", "0:in:1:2", "a:in:1", "", "0:out:-1"])
def test_a_malformed_tag_names_the_attribute_and_its_form(text):
    with pytest.raises(ValueError) as error:
        BoundaryTag.parse(text)
    message = str(error.value)
    assert TAG in message and repr(text) in message and "<region>:<in|out>:<index>" in message


def test_every_fact_that_removes_a_conversion_has_a_reason():
    """Each way folding takes a boundary's conversions away has its reason in the table; a move
    that may leave the conversion (past a narrowing cast, or joined with another) qualifies the
    boundary's reason where it does."""
    assert set(Folding) | set(Moved) - {Moved.NARROWED} == set(reasons.FREE)
    assert set(reasons.FREE) | set(reasons.STILL_CONVERTING) == set(Folding) | set(Moved)
    assert all(reason and not reason.endswith(".") for reason in reasons.FREE.values())
    assert all(suffix.startswith("; ") for suffix in reasons.STILL_CONVERTING.values())


def test_the_facts_of_a_boundary_come_in_the_order_its_reason_asks():
    tag = "0:in:1"
    folded = Folded(frozenset(), frozenset({tag}), frozenset(), frozenset({tag}), {tag: Moved.ADOPTED})
    assert folded.facts(tag) == [Folding.STORED, Folding.RECOMPUTED, Moved.ADOPTED]
    assert reasons.free(folded.facts(tag)) is Folding.STORED
    assert folded.facts("0:out:0") == [] and reasons.free([]) is None
    # a conversion moved past a narrowing cast still converts: no reason of its own
    assert reasons.free(Folded.nothing().combined(Folded(*[frozenset()] * 4, {tag: Moved.NARROWED})).facts(tag)) is None


def _folded(tag: str, fact) -> Folded:
    sets = {field: frozenset({tag}) if fact is folding else frozenset() for field, folding in (
        ("loaded", Folding.LOADED), ("stored", Folding.STORED), ("constants", Folding.CONSTANT),
        ("recomputed", Folding.RECOMPUTED))}
    return Folded(**sets, moved={tag: fact} if isinstance(fact, Moved) else {})


@pytest.mark.parametrize("fact", list(Folding) + list(Moved))
def test_a_completed_boundary_gives_the_reason_of_its_fact(fact):
    from interop.lowering.assemble import _completed
    planned = PlannedBoundary(0, "f", "in", 0, "x", (16, ), "f32", "#a", "#b", agree=False)
    boundary = _completed(planned, {}, _folded(planned.tag, fact), {})
    expected = reasons.FREE.get(fact, "folded away (the neighbouring conversion already yields the needed layout)")
    assert boundary.reason == expected and boundary.conversions == 0
    assert boundary.handoff == ("shared" if fact is Folding.LOADED else "convert")
