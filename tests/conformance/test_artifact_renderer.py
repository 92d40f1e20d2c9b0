"""ArtifactRenderer conformance (groundwork.render.renderers): every registered
adapter (Markdown, HTML, PDF, DOCX, PPTX, XLSX) and the plain-text fake.

The contract: a format token unique in the registry, a type/subtype media
type and a dotted extension; the same draft gives the same bytes; a character
the format cannot hold is a visible [U+XXXX] marker, listed, never dropped;
and an adapter that says `read_back` is read back by the project's own
extractors with every heading, paragraph, list item and table cell."""

from __future__ import annotations

import re
import time

import pytest

from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract
from groundwork.extract.markdown import markdown_blocks
from groundwork.render.fidelity import verify_rendering
from groundwork.render.renderers import ADAPTERS, RENDERERS, ArtifactRenderer, Draft
from tests.fakes_rendering import PlainTextRenderer

BODY = """# Quarterly report

## Summary

Revenue grew in the third quarter, led by the northern region.

- first point
- second point, =SUM(A1:A3) as text

## Regions

| Region | Sales | Growth |
|---|---|---|
| North | 40 | 12% |
| South | 25 | 3% |

### Detail

=1+1 is what the author wrote, not a formula.

## Outlook

Costs should fall next quarter. A bell \x07 is not a character every format holds.
"""
ALL: list[ArtifactRenderer] = [*ADAPTERS, PlainTextRenderer()]


def _draft(markdown: str = BODY) -> Draft:
    return Draft("Quarterly report", markdown, markdown_blocks(markdown))


@pytest.fixture(params=ALL, ids=lambda a: a.format)
def renderer(request: pytest.FixtureRequest) -> ArtifactRenderer:
    return request.param  # type: ignore[no-any-return]


def test_names_are_the_adapters_own(renderer: ArtifactRenderer) -> None:
    assert isinstance(renderer, ArtifactRenderer)
    assert re.fullmatch(r"[a-z][a-z0-9]{1,15}", renderer.format)
    assert re.fullmatch(r"[a-z]+/[a-z0-9.+-]+", renderer.media_type)
    assert renderer.extension.startswith(".") and len(renderer.extension) > 1
    assert len({a.format for a in ADAPTERS}) == len(ADAPTERS) == len(RENDERERS)


def test_the_same_draft_gives_the_same_bytes(renderer: ArtifactRenderer) -> None:
    one = renderer.render(_draft())
    time.sleep(1.1)  # the zip formats stamp the clock into each member unless fixed
    two = renderer.render(_draft())
    assert one.data == two.data and one.data
    assert one.format == renderer.format and one.media_type == renderer.media_type
    assert renderer.render(_draft(BODY + "\nOne more line.\n")).data != one.data


def test_an_empty_draft_still_renders(renderer: ArtifactRenderer) -> None:
    assert isinstance(renderer.render(Draft("Empty", "", [])).data, bytes)


def test_what_it_cannot_hold_is_marked_never_dropped(renderer: ArtifactRenderer) -> None:
    rendered = renderer.render(_draft())
    if renderer.read_back:
        parsed = extract(rendered.data, renderer.media_type, f"x{renderer.extension}")
        assert isinstance(parsed, ExtractedDocument)
        text = " ".join(b.text for b in parsed.blocks)
        assert ("[U+0007]" in text) == ("U+0007" in rendered.unrenderable)
        assert "bell" in text and "is not a character" in text


def test_read_back_finds_every_block(renderer: ArtifactRenderer) -> None:
    if not renderer.read_back:
        pytest.skip(f"{renderer.format} is not read back (its bytes are the body or a preview)")
    draft = _draft()
    rendered = renderer.render(draft)
    receipt = verify_rendering(
        draft.blocks,
        rendered.data,
        renderer.media_type,
        f"export{renderer.extension}",
        rendered.unrenderable,
    )
    assert receipt.passed and receipt.checked >= 12, receipt.to_dict()


@pytest.mark.parametrize("fmt", ["docx", "pptx", "xlsx"])
def test_office_formats_keep_their_structure(fmt: str) -> None:
    adapter = RENDERERS[fmt]
    parsed = extract(adapter.render(_draft()).data, adapter.media_type, f"x{adapter.extension}")
    assert isinstance(parsed, ExtractedDocument)
    tables = [b.table.rows for b in parsed.blocks if b.table is not None]
    assert any(("South", "25", "3%") in rows for rows in tables), tables
    if fmt in {"docx", "pptx"}:
        headings = {b.text for b in parsed.blocks if b.kind == BlockKind.HEADING}
        assert {"Summary", "Regions", "Outlook"} <= headings
    if fmt == "xlsx":  # text, never a formula the spreadsheet would run
        cells = {cell for rows in tables for row in rows for cell in row}
        assert "=1+1 is what the author wrote, not a formula." in cells
        assert not [w for w in parsed.warnings if "formula" in str(w).lower()]
