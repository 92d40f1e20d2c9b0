"""Citation correctness: does a citation resolve to the exact source version
and location it names, and does the stored text at that location contain its
excerpt? The check reads the extracted document of the cited version (not the
current one) and compares word sequences, so formatting (table pipes, line
breaks) does not count as a difference but any changed word does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from groundwork.citations import ELLIPSIS, Citation
from groundwork.documents import Block, BlockKind, ExtractedDocument, Location

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class CitationVerified:
    citation: Citation


@dataclass(frozen=True, slots=True)
class CitationMiss:
    citation: Citation
    reason: str  # version-missing | location-empty | excerpt-not-at-location


CitationCheck = CitationVerified | CitationMiss


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _overlaps(a0: float, a1: float, b0: float, b1: float) -> bool:
    return a0 <= b1 and b0 <= a1


def within(block: Location, cited: Location) -> bool:
    """Whether a block lies inside the cited location (each axis that the
    citation sets must match; a citation that sets none locates nothing)."""
    matched = False
    if cited.sheet is not None:
        if block.sheet != cited.sheet:
            return False
        matched = True
    if cited.slide is not None:
        if block.slide != cited.slide:
            return False
        matched = True
    if cited.page is not None:
        if block.page is None:
            return False
        end = cited.page_end or cited.page
        if not _overlaps(block.page, block.page_end or block.page, cited.page, end):
            return False
        matched = True
    if cited.start_seconds is not None:
        if block.start_seconds is None:
            return False
        if not _overlaps(
            block.start_seconds,
            block.end_seconds or block.start_seconds,
            cited.start_seconds,
            cited.end_seconds or cited.start_seconds,
        ):
            return False
        matched = True
    if cited.line_start is not None:
        if block.line_start is None:
            return False
        if not _overlaps(
            block.line_start,
            block.line_end or block.line_start,
            cited.line_start,
            cited.line_end or cited.line_start,
        ):
            return False
        matched = True
    if cited.element is not None and not matched:
        matched = block.element is not None and block.element >= cited.element
    return matched


def _contains(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    first = needle[0]
    width = len(needle)
    for start, word in enumerate(haystack):
        if word == first and haystack[start : start + width] == needle:
            return True
    return False


def _block_text(block: Block, rows: tuple[int, int] | None = None) -> str:
    """A block's words; for the cited table of a citation naming rows, only its
    header and those data rows (1-based), so a wrong row range does not verify."""
    if block.table is not None:
        table = block.table
        kept = table.rows if rows is None else table.header + table.body[rows[0] - 1 : rows[1]]
        return " ".join(" ".join(row) for row in kept)
    return block.text


def _located_text(document: ExtractedDocument, cited: Location) -> list[str]:
    """The text of every block inside the cited location. Tables are numbered
    over the document as chunking and `extract_tables` number them; a citation
    written before rows were named (no `table`) reads whole tables, as before."""
    rows = None
    if cited.table is not None and cited.row_start is not None:
        rows = (cited.row_start, cited.row_end if cited.row_end is not None else cited.row_start)
    out: list[str] = []
    tables = 0
    for block in document.blocks:
        if block.kind == BlockKind.TABLE and block.table is not None:
            tables += 1
        if within(block.location, cited):
            numbered = block.table is not None and block.kind == BlockKind.TABLE
            out.append(_block_text(block, rows if numbered and tables == cited.table else None))
    return out


def verify_citation(citation: Citation, document: ExtractedDocument | None) -> CitationCheck:
    """`document` is the extraction of `citation.source_version_id` (None if that
    version has none)."""
    if document is None:
        return CitationMiss(citation, "version-missing")
    located = _located_text(document, citation.location)
    if not located:
        return CitationMiss(citation, "location-empty")
    excerpt = citation.excerpt.removesuffix(ELLIPSIS)
    needle = _words(excerpt)
    if citation.excerpt.endswith(ELLIPSIS) and needle:
        needle = needle[:-1]  # the cut may have ended mid-token on a non-word character
    haystack = _words(" ".join(located))
    if _contains(haystack, needle):
        return CitationVerified(citation)
    return CitationMiss(citation, "excerpt-not-at-location")
