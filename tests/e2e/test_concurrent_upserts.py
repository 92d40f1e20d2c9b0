"""Concurrent searches with one API key record the ids they hand out at the
same time. Each search upserts its ids into `issued_chunks` in one statement;
if two statements lock the same rows in different orders (rank order differs
between queries) PostgreSQL aborts one of them as a deadlock. Every multi-row
upsert therefore sorts its input."""

from __future__ import annotations

import random
import threading
import uuid
from datetime import UTC, datetime

from groundwork.citations import Citation
from groundwork.documents import Location
from groundwork.stages.registration import Registration, register_file
from resources.composition.platform import Platform


def test_concurrent_record_issued_for_one_key_in_different_orders_never_deadlocks(
    platform: Platform, tenant_id: str
) -> None:
    key_id, _secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "load")
    ids = [f"ch_{uuid.uuid4().hex}" for _ in range(400)]
    threads_n = 16
    rounds = 6
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def search_like(seed: int) -> None:
        shuffler = random.Random(seed)
        try:
            barrier.wait()
            for _ in range(rounds):
                order = list(ids)
                shuffler.shuffle(order)
                platform.catalog.record_issued(key_id, order)
        except BaseException as exc:  # noqa: BLE001 - the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=search_like, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [str(e) for e in errors] == []
    assert set(platform.catalog.issued_recently(key_id, limit=1000)) == set(ids)


def test_citations_and_issued_ids_are_recorded_together(platform: Platform, tenant_id: str) -> None:
    """The search path stores its citation snapshots and the ids it hands out in
    one statement; both must be there afterwards, for any rank order, under the
    tenant wall, with concurrent searches by one key."""
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin="api:cited.txt",
        filename="cited.txt",
        data=b"cited text",
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/plain",
    )
    assert isinstance(registered, Registration)
    key_id, _secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "cite")
    principal = platform.catalog.principal_for_key(_secret)
    assert principal is not None
    walled = platform.for_tenant(tenant_id)
    ids = [f"ch_{uuid.uuid4().hex}" for _ in range(30)]
    cited: list[str] = []
    errors: list[BaseException] = []

    def search_like(seed: int) -> None:
        order = _first_ten(ids, seed)
        citations = [
            Citation(
                registered.source_id,
                registered.version_id,
                chunk_id,
                "0" * 64,
                "cited",
                Location(line_start=1),
                (),
                "cited text",
                datetime.now(UTC),
            )
            for chunk_id in order
        ]
        try:
            cited.extend(walled.catalog.record_citations(principal.scope, key_id, citations, order))
        except BaseException as exc:  # noqa: BLE001 - the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=search_like, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [str(e) for e in errors] == []
    assert len(cited) == 80
    for citation_id in cited:
        row = platform.catalog.citation(tenant_id, citation_id)
        assert row is not None and row["source_id"] == registered.source_id
    issued = set(platform.catalog.issued_recently(key_id, limit=1000))
    handed = {c for n in range(8) for c in _first_ten(ids, n)}
    assert issued == handed


def _first_ten(ids: list[str], seed: int) -> list[str]:
    order = list(ids)
    random.Random(seed).shuffle(order)
    return order[:10]
