"""The compiled overview page: the one page a model loads first about a
tenant's corpus, bounded by the serving model's tokenizer and compiled from
the sources' titles, compiled summaries and section headings, each statement
citing the source version it was built from.

Deterministic: the same sources give the same page (sources in title order,
ties by id; the level of detail is the richest that fits the budget). The page
is recompiled only when its inputs (which source versions are published, and
when each one's summary was compiled) digest differently from those it was
compiled from (`inputs_digest`). Everything in a statement comes from document
text (titles are too), so transports fence it as untrusted data.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from groundwork.chunking import TokenCounter, approximate_tokens
from groundwork.ports import AccessScope

#: The page's size by the serving model's tokenizer: what a model can afford to
#: load before it knows what to ask (the layered-retrieval design's ~500 tokens).
OVERVIEW_TOKENS = 500
#: Levels of detail tried in turn, richest first: (summary words, sections).
#: A small corpus gets each source's lead sentence and its sections; a large
#: one gets titles alone, and past that as many titles as fit and a count.
DETAIL_LEVELS = ((40, 4), (20, 3), (10, 2), (0, 0))
#: A title is document text: a long one is cut so that one source cannot take the page.
MAX_TITLE_CHARS = 120
MAX_SECTION_CHARS = 60
#: the count `page_tokens` budgets the "and N more" line for (five digits)
RESERVED_MORE = 99_999
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class OverviewInput:
    """What a page is compiled from, per source: its published version and
    when that version's summary was compiled ("" when it has none)."""

    source_id: str
    version_id: str
    summary_stamp: str


@dataclass(frozen=True, slots=True)
class OverviewSource:
    """A source as the compiler reads it."""

    source_id: str
    version_id: str
    summary_stamp: str
    title: str
    media_type: str
    summary: str  # the compiled summary page's text ("" without one)
    sections: tuple[str, ...]  # section headings in document order
    pointers: tuple[str, ...]  # raw chunk ids to drill into (the summary's)

    @property
    def input(self) -> OverviewInput:
        return OverviewInput(self.source_id, self.version_id, self.summary_stamp)


@dataclass(frozen=True, slots=True)
class OverviewStatement:
    """One line of the page and the source version it cites."""

    source_id: str
    version_id: str
    title: str  # the source's (bounded) title, as the line names it
    text: str  # without its citation marker (numbered when served)
    pointers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OverviewPage:
    tenant_id: str
    statements: tuple[OverviewStatement, ...]
    source_count: int  # sources it was compiled from (listed or not)
    inputs_digest: str
    tokens: int  # `page_tokens` by the compiling tokenizer: bounds any reader's rendering
    tokenizer: str  # the model whose tokenizer counted
    compiled_at: str = ""  # ISO time, filled when read back
    stale: bool = False  # marked for recompilation by the drift check


@runtime_checkable
class OverviewLedger(Protocol):
    """Where overview pages are compiled from and kept. The inputs are the
    tenant's live sources with a version published for its serving model (the
    page describes what search serves); a page is stored whole, replacing the
    one before, and read back only through a scope: a statement whose source
    the scope may not read, or which is no longer live, is left out (a page is
    compiled once per tenant, so each reader sees the part it may read)."""

    def overview_inputs(self, tenant_id: str) -> list[OverviewInput]:
        """What a page compiled now would be compiled from (cheap: the drift
        check and the stage's "anything changed?" read only this)."""
        ...

    def overview_sources(self, tenant_id: str) -> list[OverviewSource]:
        """The same sources with their titles, compiled summaries and headings."""
        ...

    def save_overview(self, page: OverviewPage) -> None:
        """In one transaction: the page and its statements, replacing the
        tenant's page before; a saved page is not stale."""
        ...

    def overview_record(self, tenant_id: str) -> OverviewPage | None:
        """The stored page's record (its statements left out), or None."""
        ...

    def mark_overview_stale(self, tenant_id: str, reason: str) -> int:
        """Mark the tenant's page for recompilation; how many were marked (0 or 1)."""
        ...

    def overview_page(self, scope: AccessScope) -> OverviewPage | None:
        """The stored page with the statements this scope may read, in order."""
        ...


def inputs_digest(inputs: Iterable[OverviewInput]) -> str:
    """sha256 over `source:version:stamp` lines in byte order: equal digests,
    equal inputs, whatever order they were read in."""
    lines = sorted(f"{i.source_id}:{i.version_id}:{i.summary_stamp}" for i in inputs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def render(statements: Sequence[OverviewStatement], more: int) -> str:
    """The page as a model reads it: numbered statements (the number is the
    citation), then a line naming how many sources it leaves out (`more`)."""
    lines = [f"[{n}] {s.text}" for n, s in enumerate(statements, start=1)]
    if more > 0:
        lines.append(f"(and {more} more sources: search or get_summaries for them)")
    return "\n".join(lines)


def page_tokens(statements: Sequence[OverviewStatement], count_tokens: TokenCounter) -> int:
    """What the page costs when served: its statements and room for the line
    about the rest (a reader may see sources the page does not list, or fewer
    of those it does: dropping lines never costs more), so `tokens` bounds
    every reader's rendering."""
    return count_tokens(render(statements, RESERVED_MORE)) if statements else 0


def compile_overview(
    tenant_id: str,
    sources: Sequence[OverviewSource],
    count_tokens: TokenCounter = approximate_tokens,
    tokenizer: str = "",
    max_tokens: int = OVERVIEW_TOKENS,
) -> OverviewPage:
    """The richest page that fits `max_tokens`: every source at the first
    detail level that fits, else as many titles as fit and a count of the rest.
    Lines are counted one by one and a level given up at the first line past
    the budget, so a large corpus costs about a page of counting per level
    (10,000 sources: 1.8 s when each level counted the whole corpus)."""
    ordered = sorted(sources, key=lambda s: (_title(s).casefold(), s.source_id))
    digest = inputs_digest(s.input for s in sources)
    statements: tuple[OverviewStatement, ...] = ()
    for words, sections in DETAIL_LEVELS:
        statements = _longest_prefix(
            (_statement(s, words, sections) for s in ordered), count_tokens, max_tokens
        )
        if len(statements) == len(ordered):
            break
    tokens = page_tokens(statements, count_tokens)
    return OverviewPage(tenant_id, statements, len(ordered), digest, tokens, tokenizer)


def _longest_prefix(
    candidates: Iterable[OverviewStatement], count_tokens: TokenCounter, max_tokens: int
) -> tuple[OverviewStatement, ...]:
    """The longest run of candidates whose page fits: line costs summed (less
    the tokenizer's fixed cost per call) until past the budget, then checked
    on the whole page, dropping lines while it does not fit."""
    overhead = count_tokens("")
    budget = max_tokens - count_tokens(render((), RESERVED_MORE))
    taken: list[OverviewStatement] = []
    used = 0
    for n, statement in enumerate(candidates, start=1):
        used += max(1, count_tokens(f"[{n}] {statement.text}") - overhead)
        if used > budget:
            break
        taken.append(statement)
    while taken and page_tokens(taken, count_tokens) > max_tokens:
        taken.pop()
    return tuple(taken)


def _title(source: OverviewSource) -> str:
    title = " ".join(source.title.split()) or source.source_id
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _statement(source: OverviewSource, words: int, sections: int) -> OverviewStatement:
    kind = source.media_type.rsplit("/", 1)[-1] if source.media_type else "file"
    title = _title(source)
    text = f"{title} ({kind})"
    lead = _lead(source.summary, words)
    if lead:
        text += f": {lead}"
    named = [
        h if len(h) <= MAX_SECTION_CHARS else h[: MAX_SECTION_CHARS - 1] + "…"
        for h in dict.fromkeys(" ".join(s.split()) for s in source.sections)
        if h and h != " ".join(source.title.split())
    ][:sections]
    if named:
        text += f" Sections: {'; '.join(named)}."
    return OverviewStatement(source.source_id, source.version_id, title, text, source.pointers)


def _lead(summary: str, words: int) -> str:
    """Whole lead sentences up to `words` words (the first one cut if longer)."""
    if words <= 0:
        return ""
    taken: list[str] = []
    for sentence in _SENTENCE.split(" ".join(summary.split())):
        if not sentence:
            continue
        parts = sentence.split()
        if taken and len(taken) + len(parts) > words:
            break
        taken.extend(parts)
        if len(taken) >= words:
            break
    if len(taken) > words:
        return " ".join(taken[:words]) + "…"
    return " ".join(taken)
