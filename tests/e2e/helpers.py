"""Running the Dagster pipeline for a tenant in tests, exactly as production does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest
from fastapi.testclient import TestClient

from assets.partitions import tenant_model_key
from groundwork.lifecycle import purge_deleted
from groundwork.ports import SYSTEM_TENANT
from groundwork.services.inbox_sync import SyncReport
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from resources.dagster_glue.platform_resource import GroundworkResource
from testbed.tenants import seed_tenant
from tests.conftest import TEST_DATABASE

TENANT_STAGES = [
    "source_registrations",
    "extracted_documents",
    "chunks",
    "summary_layer",
    "keyword_index",
]
#: the stages a model being prepared (not the serving one) runs in its own partition
MODEL_STAGES = ["embeddings", "published_index"]
#: a tenant_ingest run's assets (the overview page aside)
INGEST = [*TENANT_STAGES, "serving_index"]


def ingest_run(instance: dg.DagsterInstance, index_prefix: str, tenant: str) -> None:
    """One tenant_ingest run of the tenant, in process, as a sensor's would be."""
    done = dg.materialize(
        ALL_ASSETS,
        selection=INGEST,
        partition_key=tenant,
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert done.success


def resource(index_prefix: str, keyword_backend: str = "") -> GroundworkResource:
    return GroundworkResource(
        database=TEST_DATABASE, index_prefix=index_prefix, keyword_backend=keyword_backend
    )


def run_pipeline(
    instance: dg.DagsterInstance, tenant_id: str, model_key: str, groundwork: GroundworkResource
) -> list[dg.ExecuteInProcessResult]:
    if not instance.has_dynamic_partition("tenant", tenant_id):
        instance.add_dynamic_partitions("tenant", [tenant_id])
    first = dg.materialize(
        ALL_ASSETS,
        selection=TENANT_STAGES,
        partition_key=tenant_id,
        instance=instance,
        resources={"groundwork": groundwork},
    )
    second = dg.materialize(
        ALL_ASSETS,
        selection=MODEL_STAGES,
        partition_key=tenant_model_key(tenant_id, model_key),
        instance=instance,
        resources={"groundwork": groundwork},
    )
    return [first, second]


def publish_registered(platform: Platform, tenant_id: str) -> None:
    """Take what is registered for the tenant through every later stage to
    publication on its default model, with the functions the assets call
    (in process, without Dagster: seconds faster per test)."""
    from groundwork.stages.chunks import chunk_pending
    from groundwork.stages.embeddings import embed_pending
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.keyword_index import keyword_index_pending
    from groundwork.stages.publication import publish_ready
    from groundwork.stages.summary_layer import summarize_pending

    model = platform.settings.default_model_key
    embedder = platform.embedder(model)
    vectors = platform.vector_index(model)
    extract_pending(platform.catalog, platform.blobs, tenant_id)
    chunk_pending(platform.catalog, tenant_id, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant_id, embedder.count_tokens)
    keyword_index_pending(platform.catalog, platform.keywords, tenant_id)
    embed_pending(platform.catalog, vectors, embedder, tenant_id)
    publish_ready(platform.catalog, vectors, platform.keywords, tenant_id)


def write_inbox(inbox: Path, tenant_id: str, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = inbox / tenant_id / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def inbox_pass(platform: Platform, tenant_id: str, **settings: Any) -> SyncReport:
    """One pass of the tenant's inbox connector, as its registration step runs it."""
    from groundwork.services.connector_sync import SyncSettings
    from groundwork.services.inbox_sync import sync_inbox
    from resources.connectors.inbox_folder import inbox_connector
    from resources.connectors.ports import ConnectorPlatform

    inbox = platform.settings.inbox_dir
    return sync_inbox(
        platform,
        ConnectorPlatform(platform).connector_catalog(),
        lambda _: inbox_connector(inbox, tenant_id),
        inbox,
        tenant_id,
        SyncSettings(**settings),
    )


def tenant_with_notes(platform: Platform, prefix: str, count: int) -> str:
    """A new tenant with `count` short Markdown files registered (doc-0.md ...),
    waiting for extraction."""
    documents = {f"doc-{n}.md": f"# Doc {n}\n\nBody of document {n}.\n" for n in range(count)}
    return seed_tenant(platform, prefix, documents)


def source_sync(tenant_id: str, name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """One pass of a tenant's connector through the CLI; what it printed."""
    from groundwork_cli.main import main

    assert main(["source", "sync", tenant_id, name]) == 0
    return capsys.readouterr().out


def search_hits(client: TestClient, key: str, query: str) -> list[dict[str, Any]]:
    """The hits of one search through the HTTP API, which must answer 200."""
    answer = client.post(
        "/v1/search", json={"query": query}, headers={"Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 200, answer.text
    return list(answer.json()["hits"])


def assert_pool_unwalled(pool: Any) -> None:
    """Every pooled connection is the owner again: no request role, no tenant
    (after a walled checkout, or a shared transaction, returned or failed)."""
    for _ in range(pool.max_size):
        with pool.connection() as conn:
            role, tenant = conn.execute(
                "SELECT current_user, current_setting('groundwork.tenant_id', true)"
            ).fetchone()
            assert role != "groundwork_request" and not tenant


def live_system_sources(platform: Platform) -> list[str]:
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT source_id FROM sources WHERE tenant_id = %s AND state = 'active'",
            (SYSTEM_TENANT,),
        ).fetchall()
    return [r[0] for r in rows]


def close_emptying_the_system_corpus(platform: Platform) -> None:
    """A system corpus module's teardown: its database's system corpus left
    empty for the next session (every document deleted and swept), its own
    keyword indexes dropped, the platform closed."""
    for source_id in live_system_sources(platform):
        platform.catalog.mark_source_deleting(SYSTEM_TENANT, source_id)
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, SYSTEM_TENANT)
    drop = getattr(platform.keywords, "drop", None)
    if drop is not None:
        drop()
    platform.close()
