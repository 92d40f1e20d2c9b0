"""Files in a model's context, by reference: a constant cost per file.

Why by reference: a model handed a tenant's (or a turn's) files as content
spends its context on bytes it may never need, and a file's size or name
would set that cost. So each file is one line of bounded width: its id, a
rounded fixed-width size (`1.0 KB`, `100 MB`), its name cut to a bound with
its extension kept; the list is capped, and a last line names the tool that
lists the rest. No line carries any of the file's content.

Why inline bytes are refused: a `data:` URI is a file's content smuggled into
a field that should only reference one. A metadata bag (provenance inputs,
references) that carries one would travel into every tool result and context
that shows it, at the size of the file, so it is refused where it enters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groundwork.errors import Refused

#: How many files a context lists before it names the tool for the rest: 20
#: lines of at most ~90 characters are ~600 tokens, a fixed slice of a budget.
ATTACHMENT_CAP = 20
MAX_FILENAME_CHARS = 48
LISTING_TOOL = "list_files"

_UNITS = ("KB", "MB", "GB", "TB", "PB")
_DATA_URI = re.compile(r"^\s*data:([a-z0-9.+-]+/[a-z0-9.+-]+)?(;[a-z0-9.+=-]+)*,", re.IGNORECASE)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def format_size(size_bytes: int) -> str:
    """Six characters whatever the size: `  5  B`, `1.0 KB`, ` 42 MB`, `100 MB`
    (binary units; one decimal below 10, none above, never four digits)."""
    if size_bytes < 1000:
        return f"{max(0, size_bytes):>3d}  B"
    value = size_bytes / 1024
    for unit in _UNITS:
        if value < 9.95:
            return f"{value:3.1f} {unit}"
        if value < 999.5:
            return f"{value:3.0f} {unit}"
        value /= 1024
    return f"{min(value, 999):3.0f} EB"


def bounded_filename(filename: str, max_chars: int = MAX_FILENAME_CHARS) -> str:
    """The name on one line (control characters and line breaks become `?`),
    cut in the middle to `max_chars` with its extension kept."""
    name = _UNPRINTABLE.sub("?", filename.rsplit("/", 1)[-1]) or "unnamed"
    if len(name) <= max_chars:
        return name
    stem, dot, extension = name.rpartition(".")
    suffix = dot + extension if dot and len(extension) <= 10 else ""
    keep = max_chars - len(suffix) - 1
    return name[:keep] + "…" + suffix


@dataclass(frozen=True, slots=True)
class FileReference:
    """A file as a context lists it: what to call it by, never what it holds."""

    file_id: str
    filename: str
    media_type: str
    size_bytes: int

    def line(self) -> str:
        kind = self.media_type[:60]
        return f"- {self.file_id} {format_size(self.size_bytes)} {bounded_filename(self.filename)} ({kind})"


@dataclass(frozen=True, slots=True)
class FileReferences:
    files: tuple[FileReference, ...]
    more: bool  # further files exist beyond the cap

    def render(self) -> str:
        """The block a model reads: one line per file, then the tool for the rest."""
        if not self.files:
            return "No files are visible to this key."
        lines = [f"Files ({len(self.files)}{'+' if self.more else ''}, by reference):"]
        lines += [ref.line() for ref in self.files]
        if self.more:
            lines.append(
                f"More files exist: call {LISTING_TOOL} (GET /v1/files) to list the rest; "
                "read one with read_file."
            )
        return "\n".join(lines)


def references(files: Sequence[FileReference], cap: int = ATTACHMENT_CAP) -> FileReferences:
    """The first `cap` of `files` (a caller passes one more to say more exist)."""
    return FileReferences(tuple(files[:cap]), more=len(files) > cap)


def inline_bytes_at(value: Any, field: str = "", depth: int = 0) -> str | None:
    """Where in `value` a `data:` URI sits (the first, by field path), at any depth."""
    if depth > 64:
        return None
    if isinstance(value, str):
        return field or "value" if _DATA_URI.match(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = inline_bytes_at(item, f"{field}.{key}" if field else str(key), depth + 1)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = inline_bytes_at(item, f"{field}[{index}]", depth + 1)
            if found:
                return found
    return None


def refuse_inline_bytes(value: Any, field: str) -> None:
    """Refused(invalid) naming the field when a metadata bag carries a file inline."""
    where = inline_bytes_at(value, field)
    if where is not None:
        raise Refused(
            f"{where} carries a file inline (a data: URI); metadata references files, "
            "it never holds their bytes",
            "upload the file (POST /v1/files or an upload session) and reference it by "
            "its file_id / source_id and version instead",
            {"field": where},
            "invalid",
        )
