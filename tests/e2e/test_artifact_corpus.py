"""One corpus, over HTTP against the real engines and pipeline: an artifact's
passages are found by search like any document's, and the citation says it is
an artifact and which one; the save reports the artifact's indexing state; the
listing marks it; `filters.document_types` keeps an artifact's passages, or a
registered file's, inside each leg. Each leg is searched alone as well as
fused, so a leg that ignored the filter (and left it to fusion, or to nobody)
fails here."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import dagster as dg
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql

from resources.composition.platform import Platform
from resources.postgres.database import MIGRATIONS_DIR
from retrieval_api.app import create_app
from tests.e2e.helpers import resource, run_pipeline

PROVENANCE = {"tool": "test-writer", "inputs": {"prompt": "write"}, "run": "run-1"}
#: words of both documents, so each leg finds both without a filter
BOTH = "grey herons at the quarry lake, otters in the river below the mill"


@pytest.fixture(scope="module")
def corpus(platform: Platform, index_prefix: str) -> Iterator[dict[str, Any]]:
    tenant = f"c-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "corpus")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    made = client.post(
        "/v1/artifacts",
        json={
            "path": "reports/heron.md",
            "markdown": "# Heron survey\n\nThe grey herons nested beside the quarry lake "
            "in forty-two colonies this spring.\n",
            "provenance": PROVENANCE,
            "format": "pdf",
        },
        headers=headers,
    )
    assert made.status_code == 201, made.text
    upload = client.post(
        "/v1/sources",
        params={"filename": "otters.txt"},
        content=b"Otters returned to the river below the mill after ten years away.",
        headers=headers,
    )
    assert upload.status_code == 201, upload.text
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    yield {
        "client": client,
        "headers": headers,
        "artifact": made.json(),
        "upload": upload.json(),
    }


def _search(corpus: dict[str, Any], query: str) -> dict[str, Any]:
    answer = corpus["client"].post("/v1/search", json={"query": query}, headers=corpus["headers"])
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_the_save_reports_its_indexing_state(corpus: dict[str, Any]) -> None:
    assert corpus["artifact"]["indexing_state"] in {"pending", "extracting", "extracted"}
    now = corpus["client"].get(
        f"/v1/artifacts/{corpus['artifact']['artifact_id']}", headers=corpus["headers"]
    )
    assert now.json()["indexing_state"] == "extracted"  # after the pipeline ran


def test_an_artifact_is_searched_and_cited_as_an_artifact(corpus: dict[str, Any]) -> None:
    found = _search(corpus, "grey herons nested beside the quarry lake")
    assert found["outcome"] == "found", found
    top = found["hits"][0]
    artifact = corpus["artifact"]
    assert top["source_id"] == artifact["source_id"]
    assert top["citation"]["document_type"] == "artifact"
    assert top["citation"]["artifact_id"] == artifact["artifact_id"]
    other = _search(corpus, "otters returned to the river below the mill")
    first = other["hits"][0]
    assert first["source_id"] == corpus["upload"]["source_id"]
    assert first["citation"]["document_type"] == "source"
    assert first["citation"]["artifact_id"] is None


def _filtered(corpus: dict[str, Any], mode: str, types: list[str] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"query": BOTH, "mode": mode, "rerank": False}
    if types is not None:
        body["filters"] = {"document_types": types}
    answer = corpus["client"].post("/v1/search", json=body, headers=corpus["headers"])
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["outcome"] == "found", found
    assert found["missing_legs"] == [], found
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["vector", "keyword"])
def test_each_leg_finds_both_documents_without_the_filter(
    corpus: dict[str, Any], mode: str
) -> None:
    sources = {h["source_id"] for h in _filtered(corpus, mode, None)["hits"]}
    assert sources == {corpus["artifact"]["source_id"], corpus["upload"]["source_id"]}


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_the_filter_keeps_one_document_type_in_every_leg(corpus: dict[str, Any], mode: str) -> None:
    artifacts = _filtered(corpus, mode, ["artifact"])["hits"]
    assert artifacts and {h["source_id"] for h in artifacts} == {corpus["artifact"]["source_id"]}
    assert {h["citation"]["document_type"] for h in artifacts} == {"artifact"}
    sources = _filtered(corpus, mode, ["source"])["hits"]
    assert sources and {h["source_id"] for h in sources} == {corpus["upload"]["source_id"]}
    assert {h["citation"]["document_type"] for h in sources} == {"source"}
    if mode == "hybrid":
        # both legs ran under the filter and each found the one passage left
        assert set(artifacts[0]["leg_ranks"]) == {"vector", "keyword"}
        assert set(sources[0]["leg_ranks"]) == {"vector", "keyword"}
    both = _filtered(corpus, mode, ["source", "artifact"])["hits"]
    assert {h["source_id"] for h in both} == {
        corpus["artifact"]["source_id"],
        corpus["upload"]["source_id"],
    }


def test_an_unknown_document_type_is_refused_by_name(corpus: dict[str, Any]) -> None:
    answer = corpus["client"].post(
        "/v1/search",
        json={"query": BOTH, "filters": {"document_types": ["document"]}},
        headers=corpus["headers"],
    )
    assert answer.status_code == 422, answer.text
    message = answer.json()["message"]
    assert "filters.document_types" in message and "'artifact'" in message, message


def test_the_search_tool_takes_the_filter(corpus: dict[str, Any]) -> None:
    called = corpus["client"].post(
        "/v1/tools/search_files",
        json={"query": BOTH, "document_types": ["artifact"]},
        headers=corpus["headers"],
    )
    assert called.status_code == 200, called.text
    hits = called.json()["hits"]
    assert hits and {h["file_id"] for h in hits} == {corpus["artifact"]["source_id"]}
    refused = corpus["client"].post(
        "/v1/tools/search_files",
        json={"query": BOTH, "document_types": ["document"]},
        headers=corpus["headers"],
    )
    assert refused.status_code == 422, refused.text


def test_the_migration_backfills_rows_written_before_it(
    corpus: dict[str, Any], platform: Platform
) -> None:
    """Migration 0033's backfill, replayed on this tenant's rows set back to the
    column's default, inside a transaction that is rolled back: artifacts' rows
    become "artifact", a file's stay "source", and the artifact's current version
    goes through the keyword stage again (its OpenSearch documents get the field)."""
    migration = (MIGRATIONS_DIR / "0033_chunk_document_type.sql").read_text()
    backfill = migration[migration.index("DO $$") :]
    table = f"embeddings_{platform.settings.default_model_key}"
    kinds = sql.SQL(
        "SELECT source_id, array_agg(DISTINCT document_type) FROM {} "
        "WHERE source_id = ANY(%s) GROUP BY 1"
    )
    sources = [corpus["artifact"]["source_id"], corpus["upload"]["source_id"]]
    with platform.pool.connection() as conn, conn.transaction() as tx:
        for name in (table, "keyword_chunks"):
            conn.execute(
                sql.SQL("UPDATE {} SET document_type = 'source' WHERE source_id = ANY(%s)").format(
                    sql.Identifier(name)
                ),
                (sources,),
            )
        conn.execute(backfill)
        after = dict(conn.execute(kinds.format(sql.Identifier(table)), (sources,)).fetchall())
        pending = conn.execute(
            "SELECT v.source_id FROM source_versions v JOIN sources s USING (source_id) "
            "WHERE s.current_version_id = v.version_id AND v.source_id = ANY(%s) "
            "AND v.keyword_indexed_at IS NULL",
            (sources,),
        ).fetchall()
        raise psycopg.Rollback(tx)
    assert after == {
        corpus["artifact"]["source_id"]: ["artifact"],
        corpus["upload"]["source_id"]: ["source"],
    }
    assert pending == [(corpus["artifact"]["source_id"],)]
