"""A keyword search reads its hits' ids from doc values and loads no stored
field; documents written before `chunk_id` joined the mapping are still found
with their ids, and the search that met them backfills their index."""

from __future__ import annotations

import time
import uuid

from opensearchpy import helpers

from groundwork.ports import AccessScope, IndexedChunk
from resources.composition.platform import EngineEndpoints
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from resources.opensearch.query_body import search_body

SCOPE = AccessScope("alpha", ("all",))


def _chunk(chunk_id: str, text: str) -> IndexedChunk:
    return IndexedChunk(
        chunk_id, "alpha", "src-new", "ver-new", ("all",), "text/plain", "t", text, chunk_id
    )


def test_an_earlier_versions_documents_are_found_by_id_and_backfilled(
    engines: EngineEndpoints,
) -> None:
    assert engines.opensearch_url is not None
    client = client_for(engines.opensearch_url)
    index = OpenSearchKeywordIndex(client, f"gwdv-{uuid.uuid4().hex[:6]}")
    index.ensure_schema()
    name = index.index_for("alpha")
    try:
        index.upsert([_chunk("ch-new", "turbine blade inspection")])
        index.set_versions_live("alpha", ["ver-new"], True)
        # written by a version before the field: no chunk_id in its source
        helpers.bulk(
            client,
            [
                {
                    "_index": name,
                    "_id": "ch-old",
                    "_routing": "alpha",
                    "_source": {
                        "tenant_id": "alpha",
                        "source_id": "src-old",
                        "version_id": "ver-old",
                        "subjects": ["all"],
                        "media_type": "text/plain",
                        "content_hash": "h",
                        "live": True,
                        "title": "t",
                        "content": "turbine maintenance report",
                        "tags": [],
                        "source_date": None,
                    },
                }
            ],
            refresh=True,
        )
        hits = index.search(SCOPE, "turbine", 10)
        assert {(h.chunk_id, h.source_id, h.version_id) for h in hits} == {
            ("ch-new", "src-new", "ver-new"),
            ("ch-old", "src-old", "ver-old"),
        }

        deadline = time.monotonic() + 60
        while (
            client.get(index=name, id="ch-old", routing="alpha")["_source"].get("chunk_id")
            != "ch-old"
        ):
            assert time.monotonic() < deadline, "the backfill never reached ch-old"
            time.sleep(0.2)
        client.indices.refresh(index=name)

        # every hit's fields now come from doc values, and nothing stored is read
        body = search_body(SCOPE, "turbine", 10, None)
        assert body["_source"] is False and body["stored_fields"] == "_none_"
        raw = client.search(index=name, body=body, routing="alpha")["hits"]["hits"]
        assert sorted(h["fields"]["chunk_id"][0] for h in raw) == ["ch-new", "ch-old"]
        assert all("_id" not in h and "_source" not in h for h in raw)
        assert {h.chunk_id for h in index.search(SCOPE, "turbine", 10)} == {"ch-new", "ch-old"}
    finally:
        index.drop()
