"""Drill-down: raw chunk text, only for ids a previous response handed to this
key (whichever transport handed it), counted against the turn's cap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groundwork.errors import DrillDownRefused, NotFound
from groundwork.ports import Principal
from groundwork.retrieval.outcome import ChunkView
from groundwork.services import tenant_wall
from groundwork.services.platform import PlatformPorts
from groundwork.services.retrieval import CHUNK_ID
from groundwork.services.turns import TurnLedger


def drill_down(ports: PlatformPorts, who: Principal, chunk_id: str) -> ChunkView:
    """Raw chunk text, only for ids this key was handed by a previous response
    (copied verbatim); anything else is refused naming the valid ids."""
    if not CHUNK_ID.match(chunk_id):
        raise DrillDownRefused(
            f"{chunk_id!r} is not a chunk id (ch_ followed by 32 hex digits)",
            "copy a chunk id verbatim from a search, context or summaries response",
            {"valid_ids": ports.catalog.issued_recently(who.key_id)},
        )
    if not ports.catalog.was_issued(who.key_id, chunk_id):
        raise DrillDownRefused(
            f"{chunk_id} was not returned to this key in the last 24 hours; "
            "use an id from a previous response",
            "use an id from a previous response",
            {"valid_ids": ports.catalog.issued_recently(who.key_id)},
        )
    # read as searches read (a system corpus chunk while the tenant reads it)
    scope = tenant_wall.caller_scope(ports.catalog, who)
    view = ports.catalog.load_chunks(scope, [chunk_id]).get(chunk_id)
    if view is None:
        raise NotFound(f"chunk {chunk_id} is no longer available to this key")
    return view


def read_chunk(
    ports: PlatformPorts, ledger: TurnLedger, who: Principal, chunk_id: str, turn: str | None
) -> ChunkView:
    """One drill-down call of the turn: counted against the per-turn cap the
    get_chunks tool counts too (one cap per key, whichever transport), then
    `drill_down`."""
    ledger.take(ports.catalog, ports.approval_secret(), who, turn)
    return drill_down(ports, who, chunk_id)


@dataclass(frozen=True, slots=True)
class ChunksRead:
    chunks: tuple[ChunkView, ...]
    #: the ids refused (not handed to this key, malformed) or no longer available
    unknown: tuple[str, ...]
    calls_left: int


def read_chunks(
    ports: PlatformPorts,
    ledger: TurnLedger,
    who: Principal,
    chunk_ids: Sequence[str],
    turn: str | None,
) -> ChunksRead:
    """Several chunks in one drill-down call of the turn; an id that cannot be
    read is listed as unknown instead of failing the others."""
    left = ledger.take(ports.catalog, ports.approval_secret(), who, turn)
    chunks: list[ChunkView] = []
    unknown: list[str] = []
    for chunk_id in chunk_ids:
        try:
            chunks.append(drill_down(ports, who, chunk_id))
        except (DrillDownRefused, NotFound):
            unknown.append(chunk_id)
    return ChunksRead(tuple(chunks), tuple(unknown), left)
