"""Citation correctness against the stored extraction of the cited version."""

from __future__ import annotations

from datetime import UTC, datetime

from groundwork.citation_check import CitationMiss, CitationVerified, verify_citation, within
from groundwork.citations import Citation, excerpt
from groundwork.documents import Block, BlockKind, ExtractedDocument, Location, Table


def _document() -> ExtractedDocument:
    return ExtractedDocument(
        media_type="application/pdf",
        title="Report",
        blocks=(
            Block(BlockKind.HEADING, "Results", Location(page=1), level=1),
            Block(BlockKind.PARAGRAPH, "Revenue grew 12% in the third quarter.", Location(page=1)),
            Block(BlockKind.PARAGRAPH, "Costs fell on page two.", Location(page=2)),
            Block(
                BlockKind.TABLE,
                "| Region | Sales |",
                Location(page=2),
                table=Table(rows=(("Region", "Sales"), ("North", "40")), header_rows=1),
            ),
        ),
    )


def _citation(text: str, location: Location) -> Citation:
    return Citation(
        source_id="src",
        source_version_id="ver",
        chunk_id="ch",
        content_hash="h",
        title="Report",
        location=location,
        heading_path=("Results",),
        excerpt=excerpt(text),
        retrieved_at=datetime.now(UTC),
    )


def test_an_excerpt_at_its_location_verifies() -> None:
    cited = _citation("Revenue grew 12%\nin the third quarter.", Location(page=1))
    assert isinstance(verify_citation(cited, _document()), CitationVerified)
    table = _citation("| Region | Sales |\n|---|---|\n| North | 40 |", Location(page=2))
    assert isinstance(verify_citation(table, _document()), CitationVerified)


def test_a_changed_word_or_a_wrong_location_is_a_miss() -> None:
    changed = _citation("Revenue grew 15% in the third quarter.", Location(page=1))
    assert verify_citation(changed, _document()) == CitationMiss(changed, "excerpt-not-at-location")
    elsewhere = _citation("Costs fell on page two.", Location(page=1))
    assert isinstance(verify_citation(elsewhere, _document()), CitationMiss)
    nowhere = _citation("Costs fell", Location(page=9))
    assert verify_citation(nowhere, _document()) == CitationMiss(nowhere, "location-empty")
    assert verify_citation(changed, None) == CitationMiss(changed, "version-missing")


def test_location_axes_must_all_match() -> None:
    assert within(Location(line_start=5, line_end=7), Location(line_start=6, line_end=9))
    assert not within(Location(line_start=1, line_end=2), Location(line_start=6, line_end=9))
    assert within(Location(sheet="S1", cell_range="A1:B2"), Location(sheet="S1"))
    assert not within(Location(sheet="S2"), Location(sheet="S1"))
    assert not within(Location(page=1), Location())  # a citation with no location locates nothing
