"""Conversation turns for the drill-down cap, issued by the server.

The cap on drill-down calls per turn meant nothing while the caller named the
turn: a new `turn_id` reset it. A turn is now a token the server signs when it
hands out chunk ids (search and summaries, both transports), bound to the key
it was issued to and expiring after 15 minutes; drill-down takes that token,
and without one the calls count against the key's own bucket. Forged,
expired or another key's turns are refused.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from threading import Lock

from groundwork.errors import Refused
from groundwork.signing import seal, unseal

TURN_SECONDS = 900


def issue_turn(secret: bytes, key_id: str) -> str:
    """A new turn for this key (stateless: the token carries key and expiry)."""
    return seal(
        secret,
        {
            "purpose": "turn",
            "key": key_id,
            "turn": uuid.uuid4().hex,
            "exp": int(time.time()) + TURN_SECONDS,
        },
    )


def _turn_of(secret: bytes, key_id: str, token: str) -> str:
    body = unseal(secret, token)
    if isinstance(body, dict) and (
        body.get("purpose") == "turn"
        and body.get("key") == key_id
        and int(body.get("exp", 0)) >= time.time()
    ):
        return str(body["turn"])
    raise Refused(
        "turn_id is not a current turn this server issued to this key",
        "pass the turn_id from your last search or summaries response, or leave it out",
        code="invalid",
    )


@dataclass
class TurnLedger:
    """Drill-down calls per (key, turn); turns are forgotten after they expire."""

    cap: int
    calls: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)
    lock: Lock = field(default_factory=Lock)

    def take(self, secret: bytes, key_id: str, turn_token: str | None) -> int:
        """Calls left after this one; Refused `limit` at the cap, `invalid` for a
        turn that is not this key's current one."""
        turn = _turn_of(secret, key_id, turn_token) if turn_token else ""
        now = time.monotonic()
        with self.lock:
            self.calls = {k: v for k, v in self.calls.items() if now - v[1] < TURN_SECONDS}
            used, started = self.calls.get((key_id, turn), (0, now))
            if used >= self.cap:
                raise Refused(
                    f"the drill-down cap of {self.cap} calls for this turn is reached",
                    "answer from what you have, or search / read summaries for a wider view",
                    code="limit",
                )
            self.calls[(key_id, turn)] = (used + 1, started)
            return self.cap - used - 1
