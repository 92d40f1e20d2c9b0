"""A fake ArtifactRenderer: plain text, the smallest format the extractors read
back. It passes the same conformance suite as the real adapters, and a test
registers it to show that a new format is an adapter, never a schema change."""

from __future__ import annotations

from dataclasses import dataclass

from groundwork.documents import BlockKind
from groundwork.render import RenderedFile
from groundwork.render.renderers import Draft


@dataclass(frozen=True, slots=True)
class PlainTextRenderer:
    format: str = "txt"
    media_type: str = "text/plain"
    extension: str = ".txt"
    read_back: bool = True

    def render(self, draft: Draft) -> RenderedFile:
        lines: list[str] = []
        for block in draft.blocks:
            if block.kind == BlockKind.TABLE and block.table is not None:
                lines.extend(" | ".join(row) for row in block.table.rows)
            else:
                lines.append(block.text)
        return RenderedFile("\n\n".join(lines).encode(), self.format, (), self.media_type)
