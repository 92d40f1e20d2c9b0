"""Server-signed proposals and approvals for destructive artifact edits.

Why signed: a hash of the edits (the earlier token) can be computed by the
proposer itself, so nobody but the proposer ever approved anything. Now a
destructive proposal yields a `proposal` token; only a principal holding the
approve scope can exchange it for an `approval` token; the revise call that
carries an approval token applies exactly the approved edits. Both tokens are
HMAC-signed with a key that never leaves the server, expire, and are bound to
tenant, artifact, generation and the exact edits (and name the proposer and
the approver for the record).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from groundwork.signing import Refused, seal, unseal

LIFETIME = timedelta(minutes=30)
TokenKind = Literal["proposal", "approval"]


@dataclass(frozen=True, slots=True)
class Grant:
    kind: TokenKind
    tenant_id: str
    artifact_id: str
    generation: int
    digest: str  # of the exact edits (groundwork.artifact_edits.proposal_digest)
    proposer: str  # key id
    approver: str  # key id ("" on a proposal)
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class TokenRefused:
    reason: Literal["malformed", "forged", "expired", "wrong-kind", "mismatch"]


def issue(secret: bytes, grant: Grant) -> str:
    return seal(
        secret,
        {
            "k": grant.kind,
            "t": grant.tenant_id,
            "a": grant.artifact_id,
            "g": grant.generation,
            "d": grant.digest,
            "p": grant.proposer,
            "r": grant.approver,
            "e": int(grant.expires_at.timestamp()),
        },
    )


def propose(
    secret: bytes,
    tenant_id: str,
    artifact_id: str,
    generation: int,
    digest: str,
    proposer: str,
    now: datetime,
) -> str:
    return issue(
        secret,
        Grant("proposal", tenant_id, artifact_id, generation, digest, proposer, "", now + LIFETIME),
    )


def read(
    secret: bytes, token: str, kind: TokenKind, tenant_id: str, now: datetime
) -> Grant | TokenRefused:
    data = unseal(secret, token)
    if isinstance(data, Refused):
        return TokenRefused("forged" if data.reason == "forged" else "malformed")
    try:
        grant = Grant(
            kind=data["k"],
            tenant_id=str(data["t"]),
            artifact_id=str(data["a"]),
            generation=int(data["g"]),
            digest=str(data["d"]),
            proposer=str(data["p"]),
            approver=str(data["r"]),
            expires_at=datetime.fromtimestamp(int(data["e"]), UTC),
        )
    except (ValueError, KeyError, TypeError):
        return TokenRefused("malformed")
    if grant.kind != kind:
        return TokenRefused("wrong-kind")
    if grant.tenant_id != tenant_id:
        return TokenRefused("mismatch")
    if now >= grant.expires_at:
        return TokenRefused("expired")
    return grant
