"""The ArtifactRenderer port and the registry of its adapters.

A format is a string the adapter owns ("pdf", "pptx", ...), never an enum or a
schema `Literal`: a new artifact or export format is a new adapter registered
here, and the API, the tools and the stores take it unchanged (they validate
against this registry and name its formats when they refuse one). The primary
file's media type and extension come from the adapter too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from groundwork.documents import Block
from groundwork.errors import InvalidRequest
from groundwork.render import RenderedFile
from groundwork.render.docx import render_docx
from groundwork.render.html import render_html
from groundwork.render.office_text import MarkedText, cleaned_blocks, fixed_zip
from groundwork.render.pdf import FIXED_CREATION_DATE, render_pdf
from groundwork.render.pptx import render_pptx
from groundwork.render.xlsx import render_xlsx

OOXML = "application/vnd.openxmlformats-officedocument"


@dataclass(frozen=True, slots=True)
class Draft:
    """What an artifact version is rendered from: its title, its Markdown body
    and that body as blocks (parsed once, for every format)."""

    title: str
    markdown: str
    blocks: Sequence[Block]


@runtime_checkable
class ArtifactRenderer(Protocol):
    """Renders one artifact version to one format's file.

    Contract (tests/conformance/test_artifact_renderer.py): `format` is a short
    lowercase token unique in the registry, `media_type` a type/subtype and
    `extension` starts with "."; `render` is deterministic (the same draft gives
    the same bytes: dates are fixed, nothing depends on the caller or the
    clock); a character the format cannot hold is drawn as a visible [U+XXXX]
    marker and listed in `unrenderable`, never dropped; when `read_back` is
    true the project's own extractors read the file back with every heading,
    paragraph, list item and table cell of the draft (the export receipt checks
    exactly this), so a rendered artifact is as searchable as its Markdown.
    """

    @property
    def format(self) -> str: ...

    @property
    def media_type(self) -> str: ...

    @property
    def extension(self) -> str: ...

    @property
    def read_back(self) -> bool: ...

    def render(self, draft: Draft) -> RenderedFile: ...


@dataclass(frozen=True, slots=True)
class MarkdownRenderer:
    format: str = "markdown"
    media_type: str = "text/markdown"
    extension: str = ".md"
    read_back: bool = False  # the bytes are the body itself

    def render(self, draft: Draft) -> RenderedFile:
        return RenderedFile(draft.markdown.encode(), self.format, (), self.media_type)


@dataclass(frozen=True, slots=True)
class HtmlRenderer:
    format: str = "html"
    media_type: str = "text/html"
    extension: str = ".html"
    read_back: bool = False  # a preview: served only as an attachment

    def render(self, draft: Draft) -> RenderedFile:
        return RenderedFile(
            render_html(draft.title, draft.blocks), self.format, (), self.media_type
        )


@dataclass(frozen=True, slots=True)
class PdfRenderer:
    format: str = "pdf"
    media_type: str = "application/pdf"
    extension: str = ".pdf"
    read_back: bool = True

    def render(self, draft: Draft) -> RenderedFile:
        data, missing = render_pdf(draft.title, draft.blocks)
        return RenderedFile(data, self.format, missing, self.media_type)


#: draws one Office Open XML file: (title, blocks, creation date) -> (bytes,
#: characters drawn as [U+XXXX] markers)
OfficeDraw = Callable[[str, Sequence[Block], datetime], tuple[bytes, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class OfficeRenderer:
    """An Office Open XML format (DOCX, PPTX, XLSX): one adapter, its library's
    drawing function injected. Every one is drawn with the fixed creation date
    and re-zipped with fixed member times, or the same draft would give other
    bytes each second; each is read back by the project's own extractors."""

    format: str
    media_type: str
    extension: str
    draw: OfficeDraw
    read_back: bool = True

    def render(self, draft: Draft) -> RenderedFile:
        data, missing = self.draw(draft.title, draft.blocks, FIXED_CREATION_DATE)
        return RenderedFile(fixed_zip(data), self.format, missing, self.media_type)


def _draw_docx(
    title: str, blocks: Sequence[Block], created: datetime
) -> tuple[bytes, tuple[str, ...]]:
    """render_docx with the markers drawn first: python-docx refuses what XML
    cannot hold, where the PPTX and XLSX drawers mark it themselves."""
    text = MarkedText()
    cleaned = cleaned_blocks(blocks, text)
    return render_docx(text.clean(title), cleaned, created), tuple(text.missing)


ADAPTERS: tuple[ArtifactRenderer, ...] = (
    MarkdownRenderer(),
    HtmlRenderer(),
    PdfRenderer(),
    OfficeRenderer("docx", f"{OOXML}.wordprocessingml.document", ".docx", _draw_docx),
    OfficeRenderer("pptx", f"{OOXML}.presentationml.presentation", ".pptx", render_pptx),
    OfficeRenderer("xlsx", f"{OOXML}.spreadsheetml.sheet", ".xlsx", render_xlsx),
)
#: format -> adapter; the only list of formats (a test may register a fake here)
RENDERERS: dict[str, ArtifactRenderer] = {a.format: a for a in ADAPTERS}


def known_formats(registry: Mapping[str, ArtifactRenderer] | None = None) -> list[str]:
    return sorted(RENDERERS if registry is None else registry)


def renderer_for(
    fmt: str, registry: Mapping[str, ArtifactRenderer] | None = None
) -> ArtifactRenderer:
    """The adapter for `fmt`, or InvalidRequest naming every known format."""
    found = (RENDERERS if registry is None else registry).get(fmt)
    if found is None:
        raise InvalidRequest(
            f"unknown format {fmt[:40]!r}; the known formats are {', '.join(known_formats(registry))}"
        )
    return found


def extension_for(fmt: str) -> str:
    found = RENDERERS.get(fmt)
    return found.extension if found is not None else ""
