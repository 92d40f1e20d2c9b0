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
from dataclasses import dataclass

from groundwork.catalog import TenantDirectory
from groundwork.errors import Refused
from groundwork.ports import Principal
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


@dataclass(frozen=True, slots=True)
class TurnLedger:
    """The drill-down cap per (key, turn). The count lives in the tenant
    directory, shared by every process that serves the key (HTTP workers, the
    MCP server): counted in each process's memory, the cap was one per process."""

    cap: int

    def take(
        self,
        directory: TenantDirectory,
        secret: bytes,
        who: Principal,
        turn_token: str | None,
    ) -> int:
        """Calls left after this one; Refused `limit` at the cap, `invalid` for a
        turn that is not this key's current one."""
        turn = _turn_of(secret, who.key_id, turn_token) if turn_token else ""
        counted = directory.count_drilldown(who.tenant_id, who.key_id, turn, self.cap, TURN_SECONDS)
        if counted is None:
            raise Refused(
                f"the drill-down cap of {self.cap} calls for this turn is reached",
                "answer from what you have, or search / read summaries for a wider view",
                code="limit",
            )
        return self.cap - counted
