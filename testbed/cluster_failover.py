"""Losing an OpenSearch node under search load: the scenario the e2e test
asserts and `bench/cluster_failover.py` prints, written once.

Tenants are indexed through the adapter (`OpenSearchKeywordIndex`) on an
`EmbeddedOpenSearchCluster`; client threads search through the same adapter
without pause; one member is killed with SIGKILL (no shutdown hook: a crash),
left down for a while, started again; the cluster is awaited green. Every
search is recorded with its start and end, and counts as failed when it
raises or finds nothing for a query its tenant's documents all match (an
empty answer would be a silent failure).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from groundwork.errors import GroundworkError
from groundwork.ports import AccessScope
from resources.engines.opensearch import EmbeddedOpenSearchCluster
from resources.opensearch.keyword_index import OpenSearchKeywordIndex
from testbed.index_records import chunk

SUBJECTS = ("team:a",)
QUERY = "replica failover"


@dataclass(frozen=True, slots=True)
class SearchRecord:
    started: float
    ended: float
    error: str | None  # None: answered with hits


@dataclass
class FailoverOutcome:
    victim: str  # node name
    victim_was_manager: bool
    killed_at: float
    restarted_at: float
    green_at: float
    records: list[SearchRecord] = field(default_factory=list)
    counts_before: dict[str, int] = field(default_factory=dict)
    counts_after: dict[str, int] = field(default_factory=dict)

    @property
    def failures_after_kill(self) -> list[SearchRecord]:
        return [r for r in self.records if r.error is not None and r.ended >= self.killed_at]

    @property
    def failover_window(self) -> float:
        """Seconds from the kill until the end of the last search that failed
        after it (0: none failed); every search that started later answered."""
        failed = self.failures_after_kill
        return max((r.ended for r in failed), default=self.killed_at) - self.killed_at

    def failed_between(self, start: float, end: float) -> int:
        return sum(1 for r in self.records if r.error is not None and start <= r.started < end)

    def answered_between(self, start: float, end: float) -> int:
        return sum(1 for r in self.records if r.error is None and start <= r.started < end)

    @property
    def failed_after_window(self) -> int:
        return self.failed_between(self.killed_at + self.failover_window, float("inf"))

    @property
    def time_to_green(self) -> float:
        return self.green_at - self.restarted_at

    def slowest_between(self, start: float, end: float) -> float:
        """The longest search (seconds) among those started in [start, end)."""
        return max(
            (r.ended - r.started for r in self.records if start <= r.started < end), default=0.0
        )

    def slower_than(self, seconds: float) -> int:
        """Searches after the fault that took longer than `seconds`: each one a
        caller kept waiting (and a thread held) while a node said nothing."""
        return sum(
            1 for r in self.records if r.ended >= self.killed_at and r.ended - r.started > seconds
        )

    @property
    def errors(self) -> list[str]:
        return sorted({r.error for r in self.failures_after_kill if r.error})


def index_tenants(
    keywords: OpenSearchKeywordIndex, tenants: list[str], documents: int
) -> dict[str, int]:
    """Each tenant gets `documents` + its position published documents, every
    one matching QUERY; returns the counts the adapter lists."""
    for n, tenant in enumerate(tenants):
        keywords.upsert(
            [
                chunk(tenant, f"{QUERY} note {d} of {tenant} on shard recovery", source_id=f"s{d}")
                for d in range(documents + n)
            ]
        )
        keywords.set_versions_live(tenant, ["ver-1"], True)
    return tenant_counts(keywords, tenants)


def tenant_counts(keywords: OpenSearchKeywordIndex, tenants: list[str]) -> dict[str, int]:
    return {tenant: len(keywords.chunk_ids(tenant)) for tenant in tenants}


class SearchLoad:
    """`clients` threads searching round-robin over the tenants until stopped."""

    def __init__(self, keywords: OpenSearchKeywordIndex, tenants: list[str], clients: int) -> None:
        self.keywords = keywords
        self.tenants = tenants
        self.records: list[SearchRecord] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(clients)
        ]

    def _run(self, offset: int) -> None:
        n = offset
        while not self._stop.is_set():
            tenant = self.tenants[n % len(self.tenants)]
            n += 1
            started = time.monotonic()
            error: str | None = None
            try:
                hits = self.keywords.search(AccessScope(tenant, SUBJECTS), QUERY, 5)
                if not hits:
                    error = "no hits"
            except GroundworkError as exc:
                error = f"{type(exc).__name__}: {str(exc)[:160]}"
            with self._lock:
                self.records.append(SearchRecord(started, time.monotonic(), error))

    def __enter__(self) -> SearchLoad:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def lose_a_node(
    cluster: EmbeddedOpenSearchCluster,
    keywords: OpenSearchKeywordIndex,
    tenants: list[str],
    *,
    kill_manager: bool = False,
    hang: bool = False,
    clients: int = 8,
    steady_seconds: float = 3.0,
    down_seconds: float = 10.0,
    settle_seconds: float = 3.0,
    green_timeout: float = 180.0,
) -> FailoverOutcome:
    """Kill one member (the elected cluster manager, or another one) under
    load, restart it, wait for green; the tenants are already indexed. With
    `hang`, the member is stopped (SIGSTOP) instead of killed and continued
    (SIGCONT) after `down_seconds`: a node that hangs, sockets open."""
    cluster.wait_for_status("green")
    counts_before = tenant_counts(keywords, tenants)
    manager = cluster.cluster_manager()
    victim = manager if kill_manager else (manager + 1) % len(cluster.nodes)
    with SearchLoad(keywords, tenants, clients) as load:
        time.sleep(steady_seconds)
        killed_at = time.monotonic()
        if hang:
            cluster.hang(victim)
        else:
            cluster.kill(victim)
        time.sleep(down_seconds)
        restarted_at = time.monotonic()
        if hang:
            cluster.hang(victim, False)
        else:
            cluster.restart(victim)
        cluster.wait_for_status("green", timeout=green_timeout)
        green_at = time.monotonic()
        time.sleep(settle_seconds)
    return FailoverOutcome(
        victim=cluster.node_names[victim],
        victim_was_manager=victim == manager,
        killed_at=killed_at,
        restarted_at=restarted_at,
        green_at=green_at,
        records=sorted(load.records, key=lambda r: r.started),
        counts_before=counts_before,
        counts_after=tenant_counts(keywords, tenants),
    )
