"""A streaming read replica for the search path (GROUNDWORK_DATABASE_REPLICA_URL).

The rule for replication lag, and why it was chosen:

- Only the vector leg (the nearest-neighbour scan: the search's heaviest work
  in PostgreSQL) reads the replica. What decides what a caller may see is read
  on the primary: the tenant's serving model, and the result-time re-check
  (`load_chunks`: the publication pointer, the source's state and subjects),
  which also supplies every text a search returns. Every write of the search
  path (issued ids, citation snapshots) goes to the primary, so a citation id
  handed out resolves at once.
- The replica serves a tenant's vector leg only when it holds the tenant's
  search generation as the primary holds it when the search starts: every
  change to the tenant's index rows raises that counter in its own transaction
  (chunk_rows.py), so equal generations mean the replica has replayed every
  such change. Otherwise the leg runs on the primary. A replica that refuses,
  times out or is down is skipped for `retry_seconds`; the primary answers.

So a lagging or lost replica costs the primary work, never an answer: a search
sees what it would have seen without the replica. Erased or revoked content
never comes back once the call returned (the re-check reads the primary; the
generation check keeps the lagging replica's stale rows out as well), a version
is cited only once published (the pointer is read on the primary), and an
unreplayed publication never fails a search (its leg falls back).

The other candidate, making publication, erasure and revocation wait until
the replica has replayed them, was rejected: every writer (Dagster runs, the
API's delete and permission calls) would block on the replica, and a replica
that is down would leave erasure and revocation waiting on a timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from groundwork.services.health import ReplicaState
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource, TenantWalledPool

logger = logging.getLogger(__name__)

#: A checkout from the replica's pool waits this long before the primary answers
#: instead (the primary's own checkouts wait the pool's default).
REPLICA_CHECKOUT_SECONDS = 2.0
#: After a failure the replica is left alone this long: a replica that is down
#: then costs one slow search per interval, not one per search.
REPLICA_RETRY_SECONDS = 5.0


@dataclass
class ReplicaUse:
    """What the replica did for the searches of one platform (shared by its
    tenant views): counts for tests, benchmarks and operators."""

    served: int = 0  # vector legs the replica answered
    behind: int = 0  # legs sent to the primary: the replica lacked the tenant's generation
    failed: int = 0  # legs sent to the primary: the replica refused or did not answer
    down_until: float = 0.0  # time.monotonic() before which the replica is skipped
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, outcome: str) -> None:
        with self._lock:
            setattr(self, outcome, getattr(self, outcome) + 1)


class ReadReplica:
    """The replica's pool (walled for a tenant view) and its shared use record."""

    def __init__(
        self,
        pool: ConnectionSource,
        use: ReplicaUse | None = None,
        checkout_seconds: float = REPLICA_CHECKOUT_SECONDS,
        retry_seconds: float = REPLICA_RETRY_SECONDS,
    ) -> None:
        self.pool = pool
        self.use = use if use is not None else ReplicaUse()
        self.checkout_seconds = checkout_seconds
        self.retry_seconds = retry_seconds

    def walled(self, tenant_id: str) -> ReadReplica:
        """The same replica behind one tenant's row-level-security wall (setting
        a role and a setting is allowed in a standby's read-only transactions)."""
        return ReadReplica(
            TenantWalledPool(self.pool, tenant_id),  # type: ignore[arg-type]
            self.use,
            self.checkout_seconds,
            self.retry_seconds,
        )

    def usable(self) -> bool:
        return time.monotonic() >= self.use.down_until

    def served(self) -> None:
        self.use.count("served")

    def behind(self) -> None:
        self.use.count("behind")

    def failed(self, error: Exception) -> None:
        self.use.count("failed")
        self.use.down_until = time.monotonic() + self.retry_seconds
        logger.warning(
            "read replica skipped for %.0f s, the primary answers: %s", self.retry_seconds, error
        )

    def state(self, primary: ConnectionSource) -> ReplicaState:
        """How far the replica is behind `primary`, as both report it (for
        /v1/health). The replica's replay position is read first, so the
        difference from the primary's later position is never negative.
        Raises EngineUnavailable when the replica does not answer within its
        checkout time."""
        with (
            translated_errors("reading the read replica's replay state"),
            self.pool.connection(timeout=self.checkout_seconds) as conn,
        ):
            row = conn.execute(
                # the replay functions answer NULL on a server that is not in
                # recovery, and pg_is_wal_replay_paused() refuses there
                "SELECT pg_is_in_recovery(), "
                "coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text, "
                "CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END, "
                "CASE WHEN pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn() "
                "THEN coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) "
                "ELSE 0 END::float8"
            ).fetchone()
        assert row is not None
        in_recovery, replayed, paused, delay = row
        with translated_errors("reading the primary's WAL position"), primary.connection() as conn:
            lag = conn.execute(
                "SELECT greatest(pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn), 0)::bigint",
                (replayed,),
            ).fetchone()
        return ReplicaState(
            lag_bytes=int(lag[0]) if lag else 0,
            replay_delay_seconds=float(delay),
            replay_paused=bool(paused),
            in_recovery=bool(in_recovery),
        )

    def close(self) -> None:
        close = getattr(self.pool, "close", None)
        if close is not None:
            close()
