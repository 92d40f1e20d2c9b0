"""Fakes of the parsing ports (ChunkingStrategy, FileInspector, DocumentParser)
for unit tests of the core. Each passes the same conformance suite as the
real adapter (tests/conformance/test_chunking_strategy.py,
test_file_inspector.py, test_document_parser.py)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from groundwork.chunking import Chunk, approximate_tokens, bounded_segments, chunk_id_for
from groundwork.documents import (
    Block,
    BlockKind,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionResult,
    FailureReason,
    Location,
)
from groundwork.extract import finalize
from groundwork.extract.base import Extracted
from groundwork.inspection import EMPTY_CONTENT


@dataclass(frozen=True, slots=True)
class BlockPerChunk:
    """The ChunkingStrategy port at its simplest: one chunk per non-heading
    block, cut by characters only (no headings prepended, no tokens)."""

    max_chars: int = 4_000

    @property
    def name(self) -> str:
        return "block-per-chunk"

    def chunk(
        self, blocks: Sequence[Block], *, tenant_id: str, source_id: str, version_id: str
    ) -> list[Chunk]:
        out: list[Chunk] = []
        for block in blocks:
            if block.kind == BlockKind.HEADING:
                continue
            text = block.table.to_markdown() if block.table is not None else block.text
            for segment in bounded_segments(text, self.max_chars) if text.strip() else []:
                position = len(out)
                out.append(
                    Chunk(
                        chunk_id=chunk_id_for(tenant_id, version_id, position),
                        tenant_id=tenant_id,
                        source_id=source_id,
                        version_id=version_id,
                        position=position,
                        heading_path=(),
                        body=segment,
                        location=block.location,
                        kind="table" if block.table is not None else "text",
                        token_count=approximate_tokens(segment),
                    )
                )
        return out


_MAGIC = ((b"%PDF-", "application/pdf"), (b"\x89PNG\r\n\x1a\n", "image/png"))
_TEXT = {".md": "text/markdown", ".csv": "text/csv", ".txt": "text/plain"}
_OOXML = {
    "word/": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xl/": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ppt/": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


class MagicNumberInspector:
    """The FileInspector port over a table of magic numbers, without libmagic."""

    def media_type(self, data: bytes, filename: str) -> str:
        head = data[:65536]
        if not head:
            return EMPTY_CONTENT
        for magic, media_type in _MAGIC:
            if head.startswith(magic):
                return media_type
        if head.startswith(b"PK"):
            return self._package(data)
        try:
            head.decode("utf-8")
        except UnicodeDecodeError:
            return "application/octet-stream"
        extension = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        return _TEXT.get(extension, "text/plain")

    def media_type_of_path(self, path: Path | BinaryIO, filename: str) -> str:
        if isinstance(path, Path):
            return self.media_type(path.read_bytes(), filename)
        path.seek(0)
        return self.media_type(path.read(), filename)

    @staticmethod
    def _package(data: bytes) -> str:
        try:
            names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        except zipfile.BadZipFile:
            return "application/octet-stream"
        for folder, media_type in _OOXML.items():
            if any(name.startswith(folder) for name in names):
                return media_type
        return "application/zip"


class PlainTextParser:
    """The DocumentParser port for UTF-8 plain text only: a paragraph a block."""

    @property
    def media_types(self) -> frozenset[str]:
        return frozenset({"text/plain"})

    def parse(
        self,
        data: bytes,
        media_type: str,
        filename: str,
        limits: ExtractionLimits | None = None,
    ) -> ExtractionResult:
        limits = limits or ExtractionLimits()
        if not data:
            return ExtractionFailure(FailureReason.EMPTY, "the file has 0 bytes")
        if len(data) > limits.max_bytes:
            return ExtractionFailure(FailureReason.TOO_LARGE, f"{len(data)} bytes")
        if media_type not in self.media_types:
            return ExtractionFailure(FailureReason.UNSUPPORTED_TYPE, media_type)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return ExtractionFailure(FailureReason.MALFORMED, str(exc))
        paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
        blocks = [
            Block(BlockKind.PARAGRAPH, p, Location(line_start=i + 1))
            for i, p in enumerate(paragraphs)
        ]
        return finalize(Extracted(blocks=blocks), media_type, filename, limits)
