"""How an artifact's bytes are answered, once for every route that serves them.

Why these headers: the stable current download (`/v1/artifacts/{id}/download`)
names whatever version is current *now*, so a cache that kept it would serve a
superseded version after a revision: it is `private, no-store`. A file id names
one version's bytes forever, so only the version-addressed routes are
`private, immutable` with the checksum as ETag. Every answer carries a
Content-Disposition with the real name (RFC 5987 `filename*`) and nosniff;
only a PDF may be `inline`: HTML (a preview included) or SVG shown inline from
the API's own origin would run its scripts with the API's cookies and origin.
"""

from __future__ import annotations

from groundwork.services.hygiene import content_disposition

#: the media types a browser may show in place (no active content)
INLINE_MEDIA_TYPES = frozenset({"application/pdf"})
NO_STORE = "private, no-store"
IMMUTABLE = "private, immutable"


def download_name(artifact_path: str, role: str, extension: str) -> str:
    """`reports/q3.md` as a PDF primary is `q3.pdf`; its preview `q3.preview.html`."""
    base = artifact_path.rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    middle = ".preview" if role == "preview" else ""
    return f"{stem or 'artifact'}{middle}{extension}"


def disposition(filename: str, media_type: str) -> str:
    header = content_disposition(filename)
    if media_type in INLINE_MEDIA_TYPES:
        return "inline" + header.removeprefix("attachment")
    return header


def file_headers(
    filename: str, media_type: str, sha256: str, *, version_addressed: bool
) -> dict[str, str]:
    """The headers of a 200 (and, for version-addressed files, of the 304 the
    checksum ETag allows)."""
    headers = {
        "Content-Disposition": disposition(filename, media_type),
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": IMMUTABLE if version_addressed else NO_STORE,
    }
    if version_addressed:
        headers["ETag"] = f'"{sha256}"'
    return headers
