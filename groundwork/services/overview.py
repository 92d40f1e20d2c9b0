"""The compiled overview page as a caller may read it: the statements of the
sources its scope reads, numbered in page order, and a line naming how many
more of the sources it can see the page leaves out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groundwork.overview import OverviewStatement, render
from groundwork.ports import Principal
from groundwork.reading import fence_untrusted
from groundwork.services.platform import PlatformPorts


@dataclass(frozen=True, slots=True)
class OverviewView:
    statements: tuple[OverviewStatement, ...]  # statement n is cited as [n] in `text`
    text: str  # document text (titles, summaries, headings): fenced by the transports
    tokens: int  # at most this many by the compiling tokenizer (the page's bound)
    tokenizer: str
    compiled_at: str
    stale: bool  # marked for recompilation by the drift check
    sources_visible: int  # sources the caller can see, listed or not

    @property
    def chunk_ids(self) -> list[str]:
        return [p for s in self.statements for p in s.pointers]

    def presented(self) -> dict[str, Any]:
        """The page as both transports return it (`overview_page`): every
        piece of document text fenced as untrusted data."""
        return {
            "untrusted_text": fence_untrusted(self.text, "overview"),
            "statements": [
                {
                    "marker": n,
                    "source_id": s.source_id,
                    "version_id": s.version_id,
                    "title": s.title,
                    "untrusted_text": fence_untrusted(s.text, s.source_id),
                    "chunk_ids": list(s.pointers),
                }
                for n, s in enumerate(self.statements, start=1)
            ],
            "tokens": self.tokens,
            "tokenizer": self.tokenizer,
            "compiled_at": self.compiled_at,
            "stale": self.stale,
            "sources_visible": self.sources_visible,
        }


def overview_view(ports: PlatformPorts, who: Principal, visible: int) -> OverviewView | None:
    """The tenant's compiled page through the caller's scope (None before the
    first compilation). `visible`: how many sources the caller can see; the
    count of those the page leaves out never counts sources it cannot."""
    page = ports.catalog.overview_page(who.scope)
    if page is None:
        return None
    more = max(0, visible - len(page.statements))
    return OverviewView(
        statements=page.statements,
        text=render(page.statements, more),
        tokens=page.tokens,
        tokenizer=page.tokenizer,
        compiled_at=page.compiled_at,
        stale=page.stale,
        sources_visible=visible,
    )
