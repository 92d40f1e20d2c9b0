"""The keyword index of earlier versions (one shared index) is split into
per-tenant indices by ensure_schema, losing nothing."""

from __future__ import annotations

import uuid

from opensearchpy import helpers

from groundwork.ports import AccessScope
from resources.composition.platform import EngineEndpoints
from resources.opensearch.keyword_index import (
    INDEX_SETTINGS,
    MAPPINGS,
    OpenSearchKeywordIndex,
    client_for,
)


def test_a_shared_legacy_index_is_split_per_tenant(engines: EngineEndpoints) -> None:
    assert engines.opensearch_url is not None
    client = client_for(engines.opensearch_url)
    prefix = f"gwsplit-{uuid.uuid4().hex[:6]}"
    legacy = f"{prefix}-chunks"
    client.indices.create(index=legacy, body={"settings": INDEX_SETTINGS, "mappings": MAPPINGS})
    docs = [
        (tenant, f"ch-{tenant}-{n}", f"{word} report number {n}")
        for tenant, word in (("alpha", "turbine"), ("beta", "invoice"))
        for n in range(3)
    ]
    helpers.bulk(
        client,
        [
            {
                "_index": legacy,
                "_id": chunk_id,
                "_routing": tenant,
                "_source": {
                    "tenant_id": tenant,
                    "source_id": "src",
                    "version_id": "ver",
                    "subjects": ["all"],
                    "media_type": "text/plain",
                    "content_hash": chunk_id,
                    "live": True,
                    "title": "t",
                    "content": text,
                    "tags": [],
                    "source_date": None,
                },
            }
            for tenant, chunk_id, text in docs
        ],
        refresh=True,
    )
    index = OpenSearchKeywordIndex(client, prefix)
    try:
        index.ensure_schema()
        assert not client.indices.exists(index=legacy)
        assert index.chunk_ids("alpha") == {f"ch-alpha-{n}" for n in range(3)}
        assert index.chunk_ids("beta") == {f"ch-beta-{n}" for n in range(3)}
        hits = index.search(AccessScope("alpha", ("all",)), "turbine", 10)
        assert len(hits) == 3
        assert index.search(AccessScope("alpha", ("all",)), "invoice", 10) == []
        index.ensure_schema()  # a second run finds nothing to split
    finally:
        index.drop()
