"""Concurrent keyword searches reuse their HTTP connections.

urllib3's pool keeps one connection per host unless told otherwise; every
search beyond the first in flight opened a TCP connection and closed it on
return. Under bench/search_load.py at 8 clients that was 1,150 connections
opened and closed in 20 s for 2,149 searches (counted with `ss`)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from groundwork.ports import AccessScope
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from resources.platform import EngineEndpoints
from tests.conformance.fixtures import chunk


@pytest.fixture
def keywords(engines: EngineEndpoints) -> Iterator[OpenSearchKeywordIndex]:
    if engines.opensearch_url is None:
        pytest.skip("the Postgres keyword backend is configured")
    index = OpenSearchKeywordIndex(
        client_for(engines.opensearch_url), f"gwtest-conn-{uuid.uuid4().hex[:6]}"
    )
    index.ensure_schema()
    yield index
    index.drop()


def test_eight_concurrent_searches_keep_their_connections(
    keywords: OpenSearchKeywordIndex,
) -> None:
    tenant = f"conn-{uuid.uuid4().hex[:8]}"
    keywords.upsert([chunk(tenant, "connection reuse under load", chunk_id="ch-reuse")])
    keywords.set_versions_live(tenant, ["ver-1"], True)
    scope = AccessScope(tenant, ("team:a",))
    together = threading.Barrier(8)

    def one(_: int) -> list[str]:
        together.wait()  # eight searches in flight at once, 50 rounds
        return [h.chunk_id for h in keywords.search(scope, "connection reuse", 5)]

    with ThreadPoolExecutor(8) as threads:
        assert set(map(tuple, threads.map(one, range(400)))) == {("ch-reuse",)}
    (connection,) = keywords.client.transport.connection_pool.connections
    opened = connection.pool.num_connections
    # eight in flight need at most eight; one kept per host was 339 of 400
    assert opened <= 8, f"{opened} connections opened for 400 searches at 8 in flight"
