"""Ingesting a bench corpus through the Dagster assets, and the floor a run is
compared to: the bare embedding of the same chunk texts with the same model."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import dagster as dg

from groundwork.ports import EmbeddingProvider
from pipelines.definitions import ALL_ASSETS
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.platform_resource import GroundworkResource

#: Dagster's console logger at WARNING: a bench prints its own figures
QUIET_RUN: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: register -> extract -> chunk -> summarize -> keyword index, for one tenant partition
TENANT_STAGES = (
    "source_registrations",
    "extracted_documents",
    "chunks",
    "summary_layer",
    "keyword_index",
)


def settings_with_private_inbox() -> GroundworkSettings:
    """The settings with an inbox of the bench's own: a running demo's inbox
    sensor must not pick up the bench corpus."""
    os.environ["GROUNDWORK_INBOX"] = str(GroundworkSettings.from_env().home / "bench-inbox")
    return GroundworkSettings.from_env()


def materialize_stages(
    selection: Sequence[str],
    partition_key: str,
    instance: dg.DagsterInstance,
    groundwork: GroundworkResource,
) -> dg.ExecuteInProcessResult:
    """One in-process run of the selected assets for one partition, quiet."""
    return dg.materialize(
        ALL_ASSETS,
        selection=list(selection),
        partition_key=partition_key,
        instance=instance,
        resources={"groundwork": groundwork},
        run_config=QUIET_RUN,
    )


def embedding_texts(rows: Sequence[tuple[Sequence[str], str]]) -> list[str]:
    """(heading_path, body) rows as the embedding stage embeds them: the
    heading path, then the body."""
    return [(" > ".join(path) + "\n\n" + body) if path else body for path, body in rows]


def bare_embedding_seconds(
    embedder: EmbeddingProvider, texts: Sequence[str], batch: int = 32
) -> float:
    """Seconds to embed `texts` in batches of `batch`, nothing else."""
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed_documents(texts[start : start + batch])
    return time.perf_counter() - started
