"""Platform health: which engines answer, and the state of the optional pieces
(the read replica, the keyword cluster) an operator needs to see.

The rule, once, for every transport:

- The required engines (the PostgreSQL primary and the keyword index) must
  answer a probe; when one does not, the platform is `down` and the transport
  says so (the API answers 503 with Retry-After: the supervisor restarts the
  engine, clients retry).
- The read replica is optional by design: a replica that does not answer or
  lags costs the primary work, never an answer (resources/postgres/read_replica.py).
  So a lost or lagging replica makes the platform `degraded`, never `down`.
- A keyword cluster that is not green (yellow: a replica shard unassigned, a
  node lost; red: a primary shard unassigned) still answers the probe, or the
  probe would have failed: `degraded`, with the cluster's status and nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from groundwork.errors import GroundworkError

#: A replica whose replay is this far behind the primary's last change is
#: reported lagging: a search then reads the primary for every tenant changed
#: since (the generation rule), so the replica no longer takes load off it.
REPLICA_LAG_LIMIT_SECONDS = 30.0

Health = Literal["ok", "degraded", "down"]


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """The read replica as it reports itself. `lag_bytes`: WAL the primary has
    written that the replica has not replayed; `replay_delay_seconds`: age of
    the last transaction it replayed while it has WAL left to replay (0 when
    caught up, however long the primary has been idle)."""

    lag_bytes: int
    replay_delay_seconds: float
    replay_paused: bool
    in_recovery: bool = True


@dataclass(frozen=True, slots=True)
class KeywordClusterState:
    """The keyword engine's cluster health as its first answering node reports it."""

    status: str  # green | yellow | red
    nodes: int
    data_nodes: int
    unassigned_shards: int


class HealthProbes(Protocol):
    """What the health service asks of the platform. Each call raises a
    GroundworkError (EngineUnavailable, StoreError) when its engine does not answer."""

    def probe_database(self) -> None:
        """A cheap read on the primary."""
        ...

    def probe_keyword_index(self) -> None:
        """A cheap search on the keyword index."""
        ...

    def replica_state(self) -> ReplicaState | None:
        """None when no read replica is configured."""
        ...

    def keyword_cluster_state(self) -> KeywordClusterState | None:
        """None when the keyword index is not a cluster engine (PostgreSQL full text)."""
        ...


@dataclass(frozen=True, slots=True)
class HealthReport:
    status: Health
    engines: dict[str, str]  # required engines: "ok" | "unavailable: ..."
    replica: dict[str, object] = field(default_factory=dict)
    keyword_cluster: dict[str, object] = field(default_factory=dict)


def _failure(exc: GroundworkError) -> str:
    return f"unavailable: {str(exc)[:200]}"


def _attempt(probe: Callable[[], None]) -> str:
    try:
        probe()
    except GroundworkError as exc:
        return _failure(exc)
    return "ok"


def _replica_report(probes: HealthProbes) -> tuple[dict[str, object], bool]:
    """The read replica's part of the report, and whether it degrades the platform
    (unreachable, lagging, paused, or a URL that names a primary)."""
    try:
        state = probes.replica_state()
    except GroundworkError as exc:
        return {"state": _failure(exc)}, True
    if state is None:
        return {"state": "not_configured"}, False
    lagging = (
        not state.in_recovery  # the URL names a primary: not a replica of ours
        or state.replay_paused
        or state.replay_delay_seconds > REPLICA_LAG_LIMIT_SECONDS
    )
    return {
        "state": "lagging" if lagging else "ok",
        "lag_bytes": state.lag_bytes,
        "replay_delay_seconds": round(state.replay_delay_seconds, 1),
        "replay_paused": state.replay_paused,
        "in_recovery": state.in_recovery,
    }, lagging


def _cluster_report(probes: HealthProbes) -> tuple[dict[str, object], bool]:
    """The keyword cluster's part of the report, and whether it degrades the
    platform (unreachable, or not green)."""
    try:
        health = probes.keyword_cluster_state()
    except GroundworkError as exc:
        return {"status": _failure(exc)}, True
    if health is None:
        return {"status": "not_a_cluster"}, False
    return {
        "status": health.status,
        "nodes": health.nodes,
        "data_nodes": health.data_nodes,
        "unassigned_shards": health.unassigned_shards,
    }, health.status != "green"


def platform_health(probes: HealthProbes) -> HealthReport:
    engines = {
        "postgresql": _attempt(probes.probe_database),
        "keyword_index": _attempt(probes.probe_keyword_index),
    }
    replica, replica_degraded = _replica_report(probes)
    cluster, cluster_degraded = _cluster_report(probes)
    degraded = replica_degraded or cluster_degraded

    status: Health = (
        "down"
        if any(state != "ok" for state in engines.values())
        else "degraded"
        if degraded
        else "ok"
    )
    return HealthReport(status, engines, replica, cluster)
