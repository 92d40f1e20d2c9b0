"""The block model: what every extractor produces and every later stage reads.

A document is a list of typed blocks, each with the location it came from, so a
table stays a table (a question about Q3 revenue needs its row and header) and
a citation can point at a page, slide, sheet range or timestamp.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    CODE = "code"
    IMAGE = "image"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a block sits in its source. Only the fields that apply are set."""

    line_start: int | None = None
    line_end: int | None = None
    page: int | None = None
    page_end: int | None = None
    bbox: tuple[float, float, float, float] | None = None
    slide: int | None = None
    sheet: str | None = None
    cell_range: str | None = None
    start_seconds: float | None = None
    end_seconds: float | None = None
    element: int | None = None  # ordinal of the block's element (DOCX body, HTML)
    part: str | None = None  # "header", "footer", "notes": outside the main flow
    # a table chunk: the table's ordinal in its document (1-based, as
    # `extract_tables` numbers it) and the data rows it holds (1-based, header
    # excluded), so a citation points at "table 2, rows 41-60", not the whole table
    table: int | None = None
    row_start: int | None = None
    row_end: int | None = None

    def label(self) -> str:
        """A short human-readable form used in citations ("p. 3", "Sheet1!A1:C4",
        "p. 3 · table 2 · rows 41–60"). A sheet's cell range already names its rows."""
        if self.sheet is not None:
            return self._place()
        place = self._place()
        if self.table is not None:
            place += f" · table {self.table}"
        if self.row_start is not None:
            end = self.row_end if self.row_end is not None else self.row_start
            place += f" · row {end}" if end == self.row_start else f" · rows {self.row_start}–{end}"
        return place

    def _place(self) -> str:
        if self.sheet is not None:
            return f"{self.sheet}!{self.cell_range}" if self.cell_range else self.sheet
        if self.slide is not None:
            return f"slide {self.slide}" + (f" {self.part}" if self.part else "")
        if self.page is not None:
            if self.page_end is not None and self.page_end != self.page:
                return f"pp. {self.page}-{self.page_end}"
            return f"p. {self.page}"
        if self.start_seconds is not None:
            return f"{_clock(self.start_seconds)}-{_clock(self.end_seconds or self.start_seconds)}"
        if self.line_start is not None:
            if self.line_end is not None and self.line_end != self.line_start:
                return f"lines {self.line_start}-{self.line_end}"
            return f"line {self.line_start}"
        if self.part is not None:
            return self.part
        if self.element is not None:
            return f"element {self.element}"
        return "document"

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Location:
        values = dict(data)
        if values.get("bbox") is not None:
            values["bbox"] = tuple(values["bbox"])
        return cls(**values)

    @staticmethod
    def spanning(first: Location, last: Location) -> Location:
        """The location covering two blocks (used when a chunk holds several)."""
        return Location(
            line_start=first.line_start,
            line_end=last.line_end if last.line_end is not None else last.line_start,
            page=first.page,
            page_end=(last.page_end or last.page)
            if (last.page_end or last.page) != first.page
            else None,
            slide=first.slide,
            sheet=first.sheet,
            cell_range=first.cell_range if first.sheet == last.sheet else None,
            start_seconds=first.start_seconds,
            end_seconds=last.end_seconds,
            element=first.element,
            part=first.part if first.part == last.part else None,
        )


#: a sheet range's first and last column ("A3:G103" -> "A", "G")
_RANGE = re.compile(r"([A-Z]+)\d+:([A-Z]+)\d+")


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


@dataclass(frozen=True, slots=True)
class CellSpan:
    """One merged cell: its top-left position in `Table.rows` and how many rows
    and columns it covers. The merged text is repeated in every covered cell of
    `rows`, so a row read alone (a chunk, an `extract_tables` answer) is whole;
    the span is what says those repeats are one cell."""

    row: int
    column: int
    rows: int = 1
    columns: int = 1


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of cell text; the first `header_rows` rows are the header; merged
    cells are listed in `spans` (empty when the source had none).

    Where the extractor knows where each row sits, a chunk holding some of the
    rows can point at just those: `row_boxes` are the rows' (bottom, top) in
    the page's coordinates (PDF, y grows upwards), `source_rows` their row
    numbers in the sheet (XLSX; empty rows between them are skipped). Both are
    empty or one per row of `rows`."""

    rows: tuple[tuple[str, ...], ...]
    header_rows: int = 1
    spans: tuple[CellSpan, ...] = ()
    row_boxes: tuple[tuple[float, float], ...] = ()
    source_rows: tuple[int, ...] = ()

    @property
    def header(self) -> tuple[tuple[str, ...], ...]:
        return self.rows[: self.header_rows]

    @property
    def body(self) -> tuple[tuple[str, ...], ...]:
        return self.rows[self.header_rows :]

    def rows_location(self, location: Location, first: int, last: int) -> Location:
        """`location` (the table's) narrowed to data rows `first`..`last`
        (1-based, header excluded): the rows named, and the cell range or box
        cut to them where the rows' places are known, else the table's kept."""
        start = self.header_rows + first - 1
        end = self.header_rows + last - 1
        bbox = location.bbox
        if bbox is not None and len(self.row_boxes) == len(self.rows):
            boxes = self.row_boxes[start : end + 1]
            bbox = (bbox[0], min(b[0] for b in boxes), bbox[2], max(b[1] for b in boxes))
        cell_range = location.cell_range
        columns = _RANGE.fullmatch(cell_range or "")
        if columns is not None and len(self.source_rows) == len(self.rows):
            cell_range = (
                f"{columns[1]}{self.source_rows[start]}:{columns[2]}{self.source_rows[end]}"
            )
        return replace(location, bbox=bbox, cell_range=cell_range, row_start=first, row_end=last)

    def to_markdown(self, body: tuple[tuple[str, ...], ...] | None = None) -> str:
        """Markdown with the header repeated: used for whole tables and row slices."""
        rows = self.body if body is None else body
        width = max((len(r) for r in self.rows), default=0)
        header = self.header[0] if self.header else tuple("" for _ in range(width))

        def line(cells: tuple[str, ...]) -> str:
            padded = list(cells) + [""] * (width - len(cells))
            return (
                "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in padded) + " |"
            )

        out = [line(header), "| " + " | ".join("---" for _ in range(width)) + " |"]
        # Markdown has one header line: a second header row (the labels under a
        # spanning group header) leads every slice, or a row slice loses it
        out.extend(line(r) for r in self.header[1:])
        out.extend(line(r) for r in rows)
        return "\n".join(out)


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    text: str
    location: Location
    level: int | None = None  # heading level (1 = top) or list nesting depth
    table: Table | None = None
    confidence: float | None = None  # OCR/transcription confidence in [0, 1]

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "kind": self.kind.value,
            "text": self.text,
            "location": self.location.to_dict(),
        }
        if self.level is not None:
            data["level"] = self.level
        if self.table is not None:
            table: dict[str, object] = {
                "rows": [list(r) for r in self.table.rows],
                "header_rows": self.table.header_rows,
            }
            if self.table.spans:
                table["spans"] = [[s.row, s.column, s.rows, s.columns] for s in self.table.spans]
            if self.table.row_boxes:
                table["row_boxes"] = [list(b) for b in self.table.row_boxes]
            if self.table.source_rows:
                table["source_rows"] = list(self.table.source_rows)
            data["table"] = table
        if self.confidence is not None:
            data["confidence"] = self.confidence
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Block:
        table_data = data.get("table")
        table = None
        if isinstance(table_data, Mapping):
            table = Table(
                rows=tuple(tuple(str(c) for c in row) for row in table_data["rows"]),
                header_rows=int(table_data.get("header_rows", 1)),
                spans=tuple(
                    CellSpan(*(int(v) for v in span)) for span in table_data.get("spans", ())
                ),
                # absent from records written before rows were located
                row_boxes=tuple(
                    (float(low), float(high)) for low, high in table_data.get("row_boxes", ())
                ),
                source_rows=tuple(int(r) for r in table_data.get("source_rows", ())),
            )
        level = data.get("level")
        confidence = data.get("confidence")
        return cls(
            kind=BlockKind(str(data["kind"])),
            text=str(data["text"]),
            location=Location.from_dict(dict(data["location"])),
            level=int(level) if level is not None else None,
            table=table,
            confidence=float(confidence) if confidence is not None else None,
        )


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """A successful extraction. `warnings` are shown to users (truncation, low confidence)."""

    title: str
    media_type: str
    blocks: tuple[Block, ...]
    warnings: tuple[str, ...] = ()
    low_confidence: bool = False
    truncated: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "title": self.title,
            "media_type": self.media_type,
            "blocks": [b.to_dict() for b in self.blocks],
            "warnings": list(self.warnings),
            "low_confidence": self.low_confidence,
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExtractedDocument:
        return cls(
            title=str(data["title"]),
            media_type=str(data["media_type"]),
            blocks=tuple(Block.from_dict(b) for b in data["blocks"]),
            warnings=tuple(str(w) for w in data.get("warnings", ())),
            low_confidence=bool(data.get("low_confidence", False)),
            truncated=bool(data.get("truncated", False)),
        )


class FailureReason(StrEnum):
    """The closed set of reasons a document can fail for its own sake: in
    extraction, or when a search store refuses its text."""

    UNSUPPORTED_TYPE = "unsupported-type"
    TOO_LARGE = "too-large"
    TOO_MANY_PAGES = "too-many-pages"
    TIMED_OUT = "timed-out"
    ENCRYPTED = "encrypted"
    NO_TEXT_LAYER = "no-text-layer"
    MALFORMED = "malformed"
    EMPTY = "empty"
    OUT_OF_MEMORY = "out-of-memory"
    # after extraction: a search store refused the document's text
    UNINDEXABLE = "unindexable"


#: The sentence a user sees for each reason: what happened and what to do.
FAILURE_GUIDANCE: dict[FailureReason, str] = {
    FailureReason.UNSUPPORTED_TYPE: "This file type cannot be read yet; convert it to PDF, DOCX, Markdown or text.",
    FailureReason.TOO_LARGE: "The file is larger than the extraction limit; split it or attach the part that matters.",
    FailureReason.TOO_MANY_PAGES: "The document has more pages than the limit; split it into smaller documents.",
    FailureReason.TIMED_OUT: "Extraction took longer than the limit; retry, or simplify or split the document.",
    FailureReason.ENCRYPTED: "The document is password-protected; remove the password and upload it again.",
    FailureReason.NO_TEXT_LAYER: "The document has no text layer (a scan); it goes to OCR.",
    FailureReason.MALFORMED: "The file is damaged or not what its type says; re-export it and upload it again.",
    FailureReason.EMPTY: "The file is empty (0 bytes); upload it again with its content.",
    FailureReason.OUT_OF_MEMORY: "Reading the file needed more memory than allowed (often compressed content that expands enormously); re-export or print it to a new file, or split it.",
    FailureReason.UNINDEXABLE: "The search index refused this document's text (for example a run of thousands of characters without spaces); upload a copy holding readable text.",
}


@dataclass(frozen=True, slots=True)
class ExtractionFailure:
    reason: FailureReason
    detail: str = ""

    @property
    def guidance(self) -> str:
        return FAILURE_GUIDANCE[self.reason]


ExtractionResult = ExtractedDocument | ExtractionFailure


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    """Every input dimension is bounded: documents are attacker-controlled."""

    max_bytes: int = 50 * 1024 * 1024
    max_pages: int = 2_000
    max_text_bytes: int = 20 * 1024 * 1024
    max_blocks: int = 200_000
    timeout_seconds: float = 300.0
    max_media_seconds: float = 4 * 3600.0
    # PDF streams, inflated: a flate bomb of a few MB expands to gigabytes inside
    # the parser. The document's total covers scans stored as Flate images (50 MB
    # at the ~10x such pages compress by is 500 MB); one stream that is not an
    # image (a page's content, a form, a font) beyond 128 MB is no real page.
    max_inflated_bytes: int = 2 * 1024 * 1024 * 1024
    max_stream_inflated_bytes: int = 128 * 1024 * 1024
    extra: dict[str, int] = field(default_factory=dict)
