"""Signed export receipts, checked when an exported file is attached.

A render says what it made: for which version (the audience: tenant,
artifact, generation), by which adapter (the format's renderer), from which
content (the version's sha256) into which bytes (the file's sha256 and size),
until when the claim may be used. The receipt is a token of
groundwork.signing (HMAC-SHA256 with the server's key; `kind`
"export-receipt", so no approval or reference token passes for one). The save
that attaches the file to the export (`check_receipt` before
`ExportStore.finish_export`) trusts none of the render's word: it checks the
signature, the audience, the expiry, the adapter and both hashes against what
it is about to attach, and refuses by name otherwise. So a receipt replayed
for another version, a stale one, a file swapped after its render or a
render by another format's adapter is never attached.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from groundwork.errors import InvalidRequest
from groundwork.signing import Refused, seal, unseal

#: how long a render's claim may be attached: a render finishes in seconds
#: (the largest PDF measured ~4 s); the margin covers a slow export worker
RECEIPT_LIFETIME = timedelta(minutes=10)
RECEIPT_KIND = "export-receipt"

ReceiptProblem = Literal[
    "malformed",
    "forged",
    "wrong-kind",
    "wrong-audience",
    "expired",
    "wrong-adapter",
    "hash-mismatch",
]


@dataclass(frozen=True, slots=True)
class ExportReceipt:
    """What a render claims about the file it made."""

    tenant_id: str
    artifact_id: str
    generation: int
    adapter: str  # the format whose renderer made it
    source_sha256: str  # the exported version's content
    file_sha256: str
    size_bytes: int
    expires_at: datetime

    @property
    def audience(self) -> str:
        return f"{self.tenant_id}/{self.artifact_id}/{self.generation}"


class ReceiptRefused(InvalidRequest):
    """The receipt does not vouch for what is being attached; `problem` names why."""

    def __init__(self, problem: ReceiptProblem, detail: str) -> None:
        super().__init__(f"export receipt refused ({problem}): {detail}")
        self.problem = problem


def sign_receipt(secret: bytes, receipt: ExportReceipt) -> str:
    return seal(
        secret,
        {
            "k": RECEIPT_KIND,
            "aud": receipt.audience,
            "ad": receipt.adapter,
            "src": receipt.source_sha256,
            "sha": receipt.file_sha256,
            "n": receipt.size_bytes,
            "e": int(receipt.expires_at.timestamp()),
        },
    )


def new_receipt(
    tenant_id: str,
    artifact_id: str,
    generation: int,
    adapter: str,
    source_sha256: str,
    file_sha256: str,
    size_bytes: int,
    now: datetime,
) -> ExportReceipt:
    expires = datetime.fromtimestamp(int((now + RECEIPT_LIFETIME).timestamp()), UTC)
    return ExportReceipt(
        tenant_id, artifact_id, generation, adapter, source_sha256, file_sha256, size_bytes, expires
    )


def check_receipt(
    secret: bytes, token: str, expected: ExportReceipt, now: datetime
) -> ExportReceipt:
    """The receipt `token` vouches for exactly `expected` (what is about to be
    attached: its audience, adapter and hashes; its own expiry is not read)
    and has not expired; raises ReceiptRefused naming the first thing that
    does not hold."""
    data = unseal(secret, token)
    if isinstance(data, Refused):
        problem: ReceiptProblem = "forged" if data.reason == "forged" else "malformed"
        raise ReceiptRefused(problem, "the token is not one this server signed")
    kind = data.get("k")
    if kind != RECEIPT_KIND:  # another token of this server's (an approval, a reference)
        raise ReceiptRefused("wrong-kind", f"a {kind or 'kindless'} token is not an export receipt")
    try:
        audience, adapter = str(data["aud"]), str(data["ad"])
        source, file_sha, size = str(data["src"]), str(data["sha"]), int(data["n"])
        expires_at = datetime.fromtimestamp(int(data["e"]), UTC)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReceiptRefused("malformed", f"a claim is missing or unreadable ({exc})") from exc
    if audience != expected.audience:
        raise ReceiptRefused(
            "wrong-audience", f"it was issued for {audience}, not {expected.audience}"
        )
    if now >= expires_at:
        raise ReceiptRefused("expired", f"it expired at {expires_at.isoformat()}")
    if adapter != expected.adapter:
        raise ReceiptRefused(
            "wrong-adapter", f"the {adapter} renderer made it, the export is {expected.adapter}"
        )
    if source != expected.source_sha256:
        raise ReceiptRefused("hash-mismatch", "it was rendered from other content than the version")
    if file_sha != expected.file_sha256 or size != expected.size_bytes:
        raise ReceiptRefused("hash-mismatch", "the file is not the one the render made")
    return ExportReceipt(
        expected.tenant_id,
        expected.artifact_id,
        expected.generation,
        adapter,
        source,
        file_sha,
        size,
        expires_at,
    )
