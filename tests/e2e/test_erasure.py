"""Erasure removes every copy of the text (invariant 12). After a source is
deleted and swept, or its tenant erased, a phrase that only it held is found in
no column of any table of the database, in no blob and in no index: citation
snapshots keep their id, status and location, and lose their excerpt and
heading text. Both run with the bytes on the filesystem and in S3 (a real
SeaweedFS, checked by listing the bucket, incomplete uploads included)."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql

from groundwork.lifecycle import erase_tenant, purge_deleted
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from tests.e2e.helpers import publish_registered

TEXT_TYPES = ("text", "jsonb", "json", "character varying", "ARRAY")


def _places_holding(platform: Platform, phrase: str) -> list[str]:
    """Every table.column of the database whose text holds the phrase, every
    stored blob whose bytes do (the store listed and read: a folder or a
    bucket), every file under the blob folder, and every upload to the bucket
    that never completed."""
    found: list[str] = []
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_schema, table_name) "
            "WHERE t.table_type = 'BASE TABLE' "
            "AND table_schema NOT IN ('pg_catalog', 'information_schema') "
            "AND c.data_type = ANY(%s)",
            (list(TEXT_TYPES),),
        ).fetchall()
        assert len(columns) > 20  # the walk really covers the schema
        for schema, table, column in columns:
            hit = conn.execute(
                sql.SQL("SELECT count(*) FROM {}.{} WHERE {}::text LIKE %s").format(
                    sql.Identifier(schema), sql.Identifier(table), sql.Identifier(column)
                ),
                (f"%{phrase}%",),
            ).fetchone()
            if hit and hit[0]:
                found.append(f"{schema}.{table}.{column}")
    needle = phrase.encode()
    if platform.settings.blob_backend != "filesystem":  # the folder is walked below
        for key in platform.blobs.list_keys():
            if needle in platform.blobs.get(key):
                found.append(f"blob {key}")
    for path in Path(platform.settings.blob_dir).rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path))
    if platform.settings.blob_backend == "s3":
        # the session's own bucket folder (the test folder is shared with
        # other sessions' writes in flight): any upload left there is a leak,
        # but for other tenants' open upload sessions (uploads/<tenant>/...,
        # staged until they complete or expire; test_uploads_s3.py erases them)
        staged = {item.key for item in platform.upload_staging().staged()}
        found += [
            f"incomplete upload {key}"
            for key in platform.blobs.incomplete_writes()
            if key not in staged
        ]
    return found


@pytest.fixture(params=["filesystem", "s3"])
def store_platform(request: pytest.FixtureRequest) -> Platform:
    return request.getfixturevalue("platform" if request.param == "filesystem" else "s3_platform")


def _keyword_hits(platform: Platform, tenant: str, phrase: str, layer: str | None = None) -> int:
    keywords = platform.keywords
    client = getattr(keywords, "client", None)
    if client is None:
        return 0
    index = keywords.index_for(tenant)  # type: ignore[attr-defined]
    if not client.indices.exists(index=index):
        return 0
    client.indices.refresh(index=index)
    query: dict[str, object] = {"match": {"content": phrase}}
    if layer is not None:
        query = {"bool": {"must": [query], "filter": [{"term": {"layer": layer}}]}}
    return int(client.count(index=index, body={"query": query})["count"])


def _summary_copies(platform: Platform, tenant: str, phrase: str) -> int:
    """The summary layer's copies of the phrase: summary chunk rows and the
    keyword index's summary documents (vectors hold no text)."""
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM chunks WHERE tenant_id = %s AND layer = 'summary' "
            "AND body LIKE %s",
            (tenant, f"%{phrase}%"),
        ).fetchone()
    return int(row[0] if row else 0) + _keyword_hits(platform, tenant, phrase, "summary")


def _ingest(platform: Platform, tenant: str, phrase: str) -> str:
    text = (
        f"# Vault {phrase}\n\n"
        f"The {phrase} procedure opens the vault door after two keys turn.\n\n"
        "Other words stay ordinary.\n"
    )
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:vault.md",
        filename="vault.md",
        data=text.encode(),
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )
    publish_registered(platform, tenant)
    return registered.source_id


def _tenant_with_citations(platform: Platform) -> tuple[str, str, str, TestClient, dict]:
    tenant = f"e-{uuid.uuid4().hex[:8]}"
    phrase = f"quokkavault{uuid.uuid4().hex[:12]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "eraser")
    source_id = _ingest(platform, tenant, phrase)
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    hits = client.post("/v1/search", json={"query": phrase}, headers=headers).json()["hits"]
    assert hits and hits[0]["source_id"] == source_id
    assert phrase in hits[0]["citation"]["untrusted_excerpt"]
    assert _places_holding(platform, phrase)  # the walk finds the text while it exists
    # the summary layer holds a copy too (its page quotes the lead sentence) ...
    assert _summary_copies(platform, tenant, phrase) >= 2
    summary = client.post(
        "/v1/search", json={"query": phrase, "layer": "summary"}, headers=headers
    ).json()["hits"]
    assert summary and phrase in summary[0]["untrusted_text"]
    return tenant, phrase, source_id, client, headers | {"citation": hits[0]["citation_id"]}


def test_a_deleted_and_swept_source_leaves_its_text_nowhere(store_platform: Platform) -> None:
    platform = store_platform
    tenant, phrase, source_id, client, headers = _tenant_with_citations(platform)
    citation_id = headers.pop("citation")
    assert client.delete(f"/v1/sources/{source_id}", headers=headers).status_code == 202
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, tenant)

    assert _places_holding(platform, phrase) == []
    assert _summary_copies(platform, tenant, phrase) == 0  # ... and loses it with the rest
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT count(*) FROM version_summaries WHERE source_id = %s", (source_id,)
        ).fetchone() == (0,)
    assert _keyword_hits(platform, tenant, phrase) == 0
    checked = client.get(f"/v1/citations/{citation_id}", headers=headers).json()
    assert checked["status"] == "removed"
    citation = checked["citation"]
    assert citation["source_id"] == source_id and citation["location"]
    assert phrase not in str(citation)


def test_an_erased_tenant_leaves_its_text_nowhere(store_platform: Platform) -> None:
    platform = store_platform
    tenant, phrase, _source_id, _client, _headers = _tenant_with_citations(platform)

    def issued_to_its_keys() -> int:
        # issued_chunks names the key alone: no foreign key cascades to it
        with psycopg.connect(platform.database_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM issued_chunks WHERE key_id = ANY(%s)", (keys,)
            ).fetchone()
        return int(row[0]) if row else 0

    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        keys = [
            r[0]
            for r in conn.execute(
                "SELECT key_id FROM api_keys WHERE tenant_id = %s", (tenant,)
            ).fetchall()
        ]
    assert keys and issued_to_its_keys() > 0  # the search handed its hits' ids out
    erase_tenant(platform.catalog, platform.indexes(), platform.blobs, tenant)
    assert _places_holding(platform, phrase) == []
    assert _summary_copies(platform, tenant, phrase) == 0
    assert _keyword_hits(platform, tenant, phrase) == 0
    assert issued_to_its_keys() == 0
