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
from groundwork.documents import Block, ExtractedDocument, Location

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


def _block_text(block: Block) -> str:
    if block.table is not None:
        return " ".join(" ".join(row) for row in block.table.rows)
    return block.text


def verify_citation(citation: Citation, document: ExtractedDocument | None) -> CitationCheck:
    """`document` is the extraction of `citation.source_version_id` (None if that
    version has none)."""
    if document is None:
        return CitationMiss(citation, "version-missing")
    located = [b for b in document.blocks if within(b.location, citation.location)]
    if not located:
        return CitationMiss(citation, "location-empty")
    excerpt = citation.excerpt.removesuffix(ELLIPSIS)
    needle = _words(excerpt)
    if citation.excerpt.endswith(ELLIPSIS) and needle:
        needle = needle[:-1]  # the cut may have ended mid-token on a non-word character
    haystack = _words(" ".join(_block_text(b) for b in located))
    if _contains(haystack, needle):
        return CitationVerified(citation)
    return CitationMiss(citation, "excerpt-not-at-location")
