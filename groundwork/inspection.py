"""The FileInspector port: what a file is, read from its content.

Why a port: the upload policy, registration and folder sync all decide by the
sniffed type, and libmagic is one way of sniffing (a hosted classifier or a
stricter table is another); none of them should know which."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

#: What an inspector answers for a file of no bytes, whatever its name: its own
#: refusal downstream, never "unsupported type" or "malformed".
EMPTY_CONTENT = "application/x-empty"


@runtime_checkable
class FileInspector(Protocol):
    """Names a file's media type from its leading bytes.

    Contract (tests/conformance/test_file_inspector.py):
    - The name never makes a binary type: random bytes, a bare ZIP or an empty
      file called report.pdf are not application/pdf (the upload policy then
      refuses them with what is accepted, instead of a parser choking).
    - The name only decides between text types content cannot tell apart
      (Markdown, CSV, plain text are all text to content).
    - Empty content is EMPTY_CONTENT whatever the name.
    - `media_type_of_path` gives the same answer as `media_type` for the same
      bytes, reading only the file's head (and a ZIP's directory).
    """

    def media_type(self, data: bytes, filename: str) -> str: ...

    def media_type_of_path(self, path: Path | BinaryIO, filename: str) -> str:
        """A file on disk, or a seekable reader (a staged upload in a bucket)."""
        ...
