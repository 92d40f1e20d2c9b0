"""Text that an Office XML part can hold: XML 1.0 forbids most C0 control
characters, so python-pptx and openpyxl refuse them. Each is drawn as a
visible [U+XXXX] marker and reported (the PDF renderer's rule), never dropped."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Sequence
from dataclasses import replace

from groundwork.documents import Block

_MODIFIED = re.compile(rb"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)")
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class MarkedText:
    """Cleans text and remembers which characters it had to mark."""

    def __init__(self) -> None:
        self.missing: list[str] = []

    def clean(self, text: str) -> str:
        def mark(match: re.Match[str]) -> str:
            code = f"U+{ord(match.group()):04X}"
            if code not in self.missing:
                self.missing.append(code)
            return f"[{code}]"

        return _ILLEGAL.sub(mark, text)


def cleaned_blocks(blocks: Sequence[Block], text: MarkedText) -> list[Block]:
    """The blocks with every text and cell cleaned (for a renderer that takes
    blocks whole, such as the DOCX one)."""
    out: list[Block] = []
    for block in blocks:
        table = block.table
        if table is not None:
            rows = tuple(tuple(text.clean(cell) for cell in row) for row in table.rows)
            table = replace(table, rows=rows)
        out.append(replace(block, text=text.clean(block.text), table=table))
    return out


def fixed_zip(data: bytes) -> bytes:
    """The same package with every member dated 2000-01-01: python-pptx and
    openpyxl stamp the clock into each zip entry (and openpyxl into the
    package's modified date on save), so the same draft rendered a second
    later would give other bytes (and another checksum and ETag)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for info in source.infolist():
                fixed = zipfile.ZipInfo(info.filename, date_time=(2000, 1, 1, 0, 0, 0))
                fixed.compress_type = zipfile.ZIP_DEFLATED
                fixed.external_attr = info.external_attr
                member = source.read(info.filename)
                if info.filename == "docProps/core.xml":
                    member = _MODIFIED.sub(rb"\g<1>2000-01-01T00:00:00Z\g<2>", member)
                target.writestr(fixed, member)
    return out.getvalue()
