"""Signed references to a file version: HMAC-SHA256 over tenant, source,
version and expiry. Lifetimes are clamped to 15 minutes whatever the caller
asks; a read through a reference re-checks that the file is not deleted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

MAX_LIFETIME = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class Reference:
    tenant_id: str
    source_id: str
    version_id: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str  # "forged", "expired", "malformed"


def sign(
    secret: bytes, tenant_id: str, source_id: str, version_id: str, ttl: timedelta, now: datetime
) -> tuple[str, datetime]:
    lifetime = min(max(ttl, timedelta(seconds=1)), MAX_LIFETIME)
    expires_at = now + lifetime
    token = seal(
        secret, {"t": tenant_id, "s": source_id, "v": version_id, "e": int(expires_at.timestamp())}
    )
    return token, datetime.fromtimestamp(int(expires_at.timestamp()), UTC)


def verify(secret: bytes, token: str, now: datetime) -> Reference | Refused:
    data = unseal(secret, token)
    if isinstance(data, Refused):
        return data
    try:
        expires_at = datetime.fromtimestamp(int(data["e"]), UTC)
        reference = Reference(str(data["t"]), str(data["s"]), str(data["v"]), expires_at)
    except (ValueError, KeyError, TypeError):
        return Refused("malformed")
    if now >= reference.expires_at:
        return Refused("expired")
    return reference


def seal(secret: bytes, body: dict[str, object]) -> str:
    """`body` as URL-safe base64 JSON with its HMAC-SHA256: readable by anyone,
    made only by the holder of `secret` (every signed token here is one)."""
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    payload = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    signature = hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()
    return f"{payload}.{signature}"


def unseal(secret: bytes, token: str) -> dict[str, Any] | Refused:
    """The body of a token `seal` made with `secret`; Refused("forged") for any
    other signature, Refused("malformed") for anything that is not a token."""
    payload, _, signature = token.partition(".")
    if not payload or len(signature) != 64:
        return Refused("malformed")
    expected = hmac.new(secret, payload.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return Refused("forged")
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return Refused("malformed")
    return data if isinstance(data, dict) else Refused("malformed")
