"""Real documents from ../shared/data/documents (INDEX.md maps the cases).
Skipped with a named reason where the shared data is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwork.documents import BlockKind, ExtractedDocument, ExtractionFailure, FailureReason
from resources.engines.extraction_worker import ExtractionWorker
from resources.inspection.sniffing import sniff_media_type
from tests.conftest import shared_data_or_skip


@pytest.fixture(scope="module")
def documents() -> Path:
    return shared_data_or_skip("documents")


@pytest.fixture(scope="module")
def worker() -> ExtractionWorker:
    w = ExtractionWorker()
    yield w  # type: ignore[misc]
    w.close()


def _extract(worker: ExtractionWorker, path: Path) -> ExtractedDocument | ExtractionFailure:
    data = path.read_bytes()
    return worker(data, sniff_media_type(data, path.name), path.name)


@pytest.mark.parametrize(
    "relative",
    [
        "docling/pdf_password/2206.01062_pg3.pdf",
        "pypdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf",
        "pdfplumber/password-example.pdf",
    ],
)
def test_encrypted_pdfs(worker: ExtractionWorker, documents: Path, relative: str) -> None:
    result = _extract(worker, documents / relative)
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.ENCRYPTED


@pytest.mark.parametrize(
    "relative",
    [
        "docling/pdf/corrupted.pdf",
        "pypdf-sample-files/017-unreadable-meta-data/unreadablemetadata.pdf",
    ],
)
def test_malformed_pdfs(worker: ExtractionWorker, documents: Path, relative: str) -> None:
    result = _extract(worker, documents / relative)
    assert isinstance(result, ExtractionFailure) and result.reason == FailureReason.MALFORMED


@pytest.mark.parametrize(
    "name",
    [
        "ocr_test.pdf",
        "ocr_test_rotated_90.pdf",
        "ocr_test_rotated_180.pdf",
        "ocr_test_rotated_270.pdf",
    ],
)
def test_scans_and_rotated_scans_read_upright(
    worker: ExtractionWorker, documents: Path, name: str
) -> None:
    result = _extract(worker, documents / "docling" / "ocr" / name)
    assert isinstance(result, ExtractedDocument)
    text = " ".join(b.text for b in result.blocks)
    assert "Docling bundles PDF document conversion to JSON and Markdown" in text
    assert all(b.confidence is not None for b in result.blocks)


def test_every_corpus_file_yields_blocks_or_a_failure_value(
    worker: ExtractionWorker, documents: Path
) -> None:
    outcomes: dict[str, str] = {}
    for path in sorted(documents.rglob("*")):
        if not path.is_file() or "groundtruth" in path.parts or "comparisons" in path.parts:
            continue
        if path.name.startswith(("SOURCE", "LICENSE", "INDEX")) or path.suffix in (
            ".md",
            ".txt",
            ".json",
        ):
            continue
        result = _extract(worker, path)
        outcomes[str(path.relative_to(documents))] = (
            result.reason.value if isinstance(result, ExtractionFailure) else "ok"
        )
    failures = {k: v for k, v in outcomes.items() if v != "ok"}
    # Only the cases INDEX.md names as encrypted or malformed may fail.
    assert set(failures.values()) <= {"encrypted", "malformed"}
    assert all(
        "password" in k or "corrupted" in k or "unreadable" in k or "Strict" in k for k in failures
    )
    assert len(outcomes) > 100


def test_docx_content_controls_and_xlsx_sheets(worker: ExtractionWorker, documents: Path) -> None:
    control = _extract(worker, documents / "docling/docx/content_control_with_picture.docx")
    assert isinstance(control, ExtractedDocument) and control.blocks
    book = _extract(worker, documents / "docling/xlsx/xlsx_01.xlsx")
    assert isinstance(book, ExtractedDocument)
    assert len([b for b in book.blocks if b.kind == BlockKind.HEADING]) == 4


def test_csv_ragged_rows_are_reported(worker: ExtractionWorker, documents: Path) -> None:
    result = _extract(worker, documents / "docling/csv/csv-too-many-columns.csv")
    assert isinstance(result, ExtractedDocument)
    assert any("different number of fields" in w for w in result.warnings)
