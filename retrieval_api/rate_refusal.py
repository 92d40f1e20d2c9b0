"""A flood refused at the door (pure ASGI, before routing, body parsing and
the key's lookup): a key whose rate buckets this process knows to be empty
gets its 429 with Retry-After for microseconds of work, held up to
MAX_HOLD_SECONDS (an asyncio sleep: a client that retries at once is slowed to
a few requests per second per connection), so a tenant flooding the API does
not take the server from the others. The rule and the buckets
are groundwork.services.limits' (`RateLimiter.refuse_early`); a key not
refused here goes the whole way, and the route-scope check admits it
(`retrieval_api.scopes.authorize`), once per request. Outside admission
control: a refused flood takes no request slot."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from groundwork.services.limits import RateLimiter, key_digest
from retrieval_api.admission import NEVER_QUEUED

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _secret(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The key as retrieval_api.deps.principal_from_request reads it."""
    found: dict[bytes, bytes] = dict(headers)
    authorization = found.get(b"authorization", b"").decode("latin-1")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    secret = found.get(b"x-api-key", b"").decode("latin-1")
    return secret or None


class EarlyRateRefusal:
    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in NEVER_QUEUED:
            await self.app(scope, receive, send)  # health answers whoever asks
            return
        secret = _secret(scope.get("headers", []))
        if secret is not None:
            digest = key_digest(secret)
            refused = self.limiter.refuse_early(digest)
            if refused is not None:
                # held a moment (no CPU): a client retrying at once is slowed down
                await asyncio.sleep(refused.hold_seconds)
                await _reply(
                    send, refused.code, refused.message, refused.alternative, refused.details
                )
                return
            scope.setdefault("state", {})["key_digest"] = digest  # request.state.key_digest
        await self.app(scope, receive, send)


async def _reply(
    send: Send, code: str, message: str, alternative: str, details: dict[str, object]
) -> None:
    body = json.dumps(
        {"error": code, "message": message, "alternative": alternative, **details}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(details["retry_after_seconds"]).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
