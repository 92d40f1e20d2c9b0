"""Running the Dagster pipeline for a tenant in tests, exactly as production does."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.partitions import tenant_model_key
from pipelines.definitions import ALL_ASSETS
from resources.dagster_resources import GroundworkResource
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


def write_inbox(inbox: Path, tenant_id: str, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = inbox / tenant_id / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
