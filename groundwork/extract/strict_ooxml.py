"""Strict OOXML (ISO/IEC 29500 Strict) read as Transitional.

Word, Excel and PowerPoint can save "Strict Open XML": the same parts and
elements as the usual Transitional files, under other namespace URIs
(`http://purl.oclc.org/ooxml/...`) and relationship types. python-docx,
python-pptx and openpyxl know only Transitional, so a Strict file was reported
`malformed` although nothing in it is damaged. Renaming the namespaces (every
XML part and relationship part, in memory, after the container's inflation
bounds were checked) lets the same readers handle it; values that differ
between the two flavours (e.g. percentages) matter to layout, not to text.
"""

from __future__ import annotations

import re
import zipfile
from io import BytesIO

#: Strict names whose Transitional spelling is not the mechanical rewrite below.
_SPECIAL = {
    b"http://purl.oclc.org/ooxml/officeDocument/extendedProperties": b"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties",
    b"http://purl.oclc.org/ooxml/officeDocument/customProperties": b"http://schemas.openxmlformats.org/officeDocument/2006/custom-properties",
    b"http://purl.oclc.org/ooxml/officeDocument/relationships/extendedProperties": b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties",
    b"http://purl.oclc.org/ooxml/officeDocument/relationships/customProperties": b"http://schemas.openxmlformats.org/officeDocument/2006/relationships/custom-properties",
}
_SPECIAL_PATTERN = re.compile(
    b"|".join(re.escape(k) for k in sorted(_SPECIAL, key=len, reverse=True))
)
#: `http://purl.oclc.org/ooxml/<area>/<rest>` is
#: `http://schemas.openxmlformats.org/<area>/2006/<rest>` for every other name
#: (wordprocessingml/main, drawingml/chart, officeDocument/relationships/..., ...).
_GENERIC = re.compile(rb"http://purl\.oclc\.org/ooxml/([A-Za-z]+)/")
_MARKER = b"http://purl.oclc.org/ooxml/"


def is_strict(archive: zipfile.ZipFile) -> bool:
    """Strict packages name their main part with a Strict relationship type."""
    try:
        return _MARKER in archive.read("_rels/.rels")
    except KeyError:
        return False


def as_transitional(archive: zipfile.ZipFile) -> bytes:
    """The package rewritten with Transitional namespaces (other parts copied)."""
    out = BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in archive.infolist():
            payload = archive.read(entry)
            if entry.filename.endswith((".xml", ".rels")) and _MARKER in payload:
                payload = _SPECIAL_PATTERN.sub(lambda m: _SPECIAL[m.group(0)], payload)
                payload = _GENERIC.sub(rb"http://schemas.openxmlformats.org/\1/2006/", payload)
            target.writestr(entry.filename, payload)
    return out.getvalue()
