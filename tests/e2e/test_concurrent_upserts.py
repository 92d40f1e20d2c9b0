"""Concurrent searches with one API key record the ids they hand out at the
same time. Each search upserts its ids into `issued_chunks` in one statement;
if two statements lock the same rows in different orders (rank order differs
between queries) PostgreSQL aborts one of them as a deadlock. Every multi-row
upsert therefore sorts its input."""

from __future__ import annotations

import random
import threading
import uuid

from resources.platform import Platform


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
