"""Upload policy: what may be uploaded, checked before and after the bytes.

The declared size is checked before any byte is accepted; the declared size is
only a claim, so the stream is capped while it is read. The media type is
sniffed from content and must be on an exact allow-list (no wildcards:
`image/*` is how an SVG becomes an accepted image) and agree with the file's
extension. Every refusal says what is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_UPLOAD_BYTES = 256 * 1024 * 1024

#: extension -> the exact media types content sniffing may report for it
ALLOWED: dict[str, frozenset[str]] = {
    ".pdf": frozenset({"application/pdf"}),
    ".docx": frozenset({"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}),
    ".xlsx": frozenset({"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}),
    ".pptx": frozenset(
        {"application/vnd.openxmlformats-officedocument.presentationml.presentation"}
    ),
    ".csv": frozenset({"text/csv"}),
    ".md": frozenset({"text/markdown"}),
    ".txt": frozenset({"text/plain"}),
    ".html": frozenset({"text/html"}),
    ".htm": frozenset({"text/html"}),
    ".png": frozenset({"image/png"}),
    ".jpg": frozenset({"image/jpeg"}),
    ".jpeg": frozenset({"image/jpeg"}),
    ".tif": frozenset({"image/tiff"}),
    ".tiff": frozenset({"image/tiff"}),
    ".webp": frozenset({"image/webp"}),
    ".mp3": frozenset({"audio/mpeg"}),
    ".wav": frozenset({"audio/x-wav", "audio/wav", "audio/vnd.wave"}),
    ".m4a": frozenset({"audio/mp4", "audio/x-m4a"}),
    ".mp4": frozenset({"video/mp4"}),
}


@dataclass(frozen=True, slots=True)
class UploadRefused:
    reason: str  # too-large, unsupported-type, type-mismatch, bad-offset, ...
    message: str  # says what is accepted


def _extension(filename: str) -> str:
    return ("." + filename.rsplit(".", 1)[-1].lower()) if "." in filename else ""


def accepted_summary() -> str:
    return ", ".join(sorted(ALLOWED))


def check_declared(
    filename: str, declared_size: int, limit: int = MAX_UPLOAD_BYTES
) -> UploadRefused | None:
    """Before any byte: size within the limit, extension on the allow-list."""
    if declared_size < 0:
        return UploadRefused("invalid-size", "the declared size must be zero or more bytes")
    if declared_size > limit:
        return UploadRefused(
            "too-large",
            f"the declared size {declared_size} bytes is over the limit of {limit} bytes",
        )
    if _extension(filename) not in ALLOWED:
        return UploadRefused(
            "unsupported-type",
            f"{filename!r} has no accepted extension; accepted: {accepted_summary()}",
        )
    return None


#: what content sniffing reports for a file of 0 bytes, whatever its name
EMPTY_CONTENT = "application/x-empty"


def check_content(filename: str, sniffed: str) -> UploadRefused | None:
    """After the bytes: the sniffed type must be exactly one the extension allows.
    An empty file has a refusal of its own (it is no type at all), and every
    refusal lists the accepted extensions."""
    allowed = ALLOWED.get(_extension(filename))
    if allowed is None:
        return UploadRefused("unsupported-type", f"accepted extensions: {accepted_summary()}")
    if sniffed == EMPTY_CONTENT:
        return UploadRefused(
            "empty-file",
            f"{filename!r} is empty (0 bytes); upload the file with its content "
            f"(accepted extensions: {accepted_summary()})",
        )
    if sniffed not in allowed:
        return UploadRefused(
            "type-mismatch",
            f"the content is {sniffed}, which a {_extension(filename)} file may not be "
            f"(a {_extension(filename)} file must be {', '.join(sorted(allowed))}; "
            f"accepted extensions: {accepted_summary()})",
        )
    return None
