"""FileInspector conformance: the contract in groundwork.inspection.FileInspector,
run against libmagic (resources/inspection/sniffing.py, what registration,
uploads and folder sync use) and the magic-number fake."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from groundwork.inspection import EMPTY_CONTENT, FileInspector
from resources.inspection.sniffing import LibmagicInspector
from tests.fakes_parsing import MagicNumberInspector

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
BINARY = {"application/pdf", DOCX, "image/png"}


def _zip(entries: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, format="PNG")
    return buffer.getvalue()


PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
RANDOM = bytes((n * 97 + 13) % 256 for n in range(4096)) + os.urandom(4096)
PLAIN_ZIP = _zip({"notes/readme.txt": "not an office document"})
WORD = _zip(
    {
        "[Content_Types].xml": "<Types/>",
        "word/document.xml": "<w:document/>",
    }
)


class FileInspectorContract:
    @pytest.fixture
    def inspector(self) -> FileInspector:
        raise NotImplementedError

    def test_is_the_port(self, inspector: FileInspector) -> None:
        assert isinstance(inspector, FileInspector)

    @pytest.mark.parametrize(
        ("data", "expected"), [(PDF, "application/pdf"), (WORD, DOCX)], ids=["pdf", "docx"]
    )
    def test_content_names_binary_types_whatever_the_name(
        self, inspector: FileInspector, data: bytes, expected: str
    ) -> None:
        for name in (f"file{expected[-4:]}", "upload.bin", "notes.txt"):
            assert inspector.media_type(data, name) == expected, name
        assert inspector.media_type(_png(), "photo.txt") == "image/png"

    @pytest.mark.parametrize("name", ["report.pdf", "memo.docx", "a.png"])
    @pytest.mark.parametrize("data", [PLAIN_ZIP, RANDOM], ids=["zip", "random"])
    def test_the_name_never_makes_a_binary_type(
        self, inspector: FileInspector, data: bytes, name: str
    ) -> None:
        assert inspector.media_type(data, name) not in BINARY

    @pytest.mark.parametrize("name", ["report.pdf", "notes.md", "noname"])
    def test_empty_content_is_empty_whatever_the_name(
        self, inspector: FileInspector, name: str
    ) -> None:
        assert inspector.media_type(b"", name) == EMPTY_CONTENT

    @pytest.mark.parametrize(
        ("name", "expected"),
        [("notes.md", "text/markdown"), ("table.csv", "text/csv"), ("notes.txt", "text/plain")],
    )
    def test_the_name_decides_between_text_types(
        self, inspector: FileInspector, name: str, expected: str
    ) -> None:
        data = b"alpha,beta\n1,2\n" if name.endswith(".csv") else b"Plain words, nothing more.\n"
        assert inspector.media_type(data, name) == expected

    @pytest.mark.parametrize("data", [PDF, WORD, PLAIN_ZIP, b"", b"# Notes\n\nwords\n"])
    def test_a_path_gives_the_answer_its_bytes_give(
        self, inspector: FileInspector, data: bytes, tmp_path: Path
    ) -> None:
        path = tmp_path / "staged"
        path.write_bytes(data)
        assert inspector.media_type_of_path(path, "notes.md") == inspector.media_type(
            data, "notes.md"
        )

    @pytest.mark.parametrize("data", [PDF, WORD, PLAIN_ZIP, b"", b"# Notes\n\nwords\n"])
    def test_a_seekable_reader_gives_the_answer_its_bytes_give(
        self, inspector: FileInspector, data: bytes
    ) -> None:
        """A staged upload in a bucket is read through a seekable reader."""
        reader = io.BytesIO(data)
        reader.seek(len(data))  # wherever it stands
        assert inspector.media_type_of_path(reader, "notes.md") == inspector.media_type(
            data, "notes.md"
        )


class TestLibmagicInspector(FileInspectorContract):
    @pytest.fixture
    def inspector(self) -> FileInspector:
        return LibmagicInspector()


class TestMagicNumberInspectorFake(FileInspectorContract):
    @pytest.fixture
    def inspector(self) -> FileInspector:
        return MagicNumberInspector()
