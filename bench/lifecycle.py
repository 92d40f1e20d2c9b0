"""Index lifecycle figures: chunking throughput, embedding throughput per model,
and freshness (a 10-page text PDF written to the inbox -> searchable).

    uv run python bench/lifecycle.py [--rounds 10]

Freshness here triggers the runs as soon as the file lands (what the sensors
do, minus their polling interval: inbox 10 s, pending work 15 s with the
daemon's own tick), so it measures the pipeline; the sensor interval adds to it
in a running deployment.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import uuid

import dagster as dg  # noqa: E402

from assets.partitions import tenant_model_key  # noqa: E402
from bench.ingestion import (  # noqa: E402
    TENANT_STAGES,
    materialize_stages,
    settings_with_private_inbox,
)
from bench.timing import percentile  # noqa: E402
from groundwork.chunking import ChunkingPolicy, chunk_blocks  # noqa: E402
from groundwork.embedding_models import KNOWN_MODELS  # noqa: E402
from groundwork.extract import extract  # noqa: E402
from groundwork.ports import AccessScope  # noqa: E402
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search  # noqa: E402
from groundwork.retrieval.outcome import Found  # noqa: E402
from resources.composition.platform import Platform, connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from resources.dagster_glue.platform_resource import GroundworkResource  # noqa: E402
from testbed.documents import report_pdf  # noqa: E402

DATABASE = "groundwork_bench"
PREFIX = "gwbench"


HANDBOOK = (
    "# Handbook\n\n"
    + "\n\n".join(
        f"## Part {i}\n\n" + "Policy sentence about storage quotas. " * 40 for i in range(50)
    )
).encode()


def print_chunking_and_embedding(platform: Platform) -> None:
    """Chunking throughput with each known model's tokenizer (a 50-part Markdown
    handbook, 20 times) and embedding throughput of 64 of its chunks."""
    markdown_doc = extract(HANDBOOK, "text/markdown", "h.md")
    for key in sorted(KNOWN_MODELS):
        embedder = platform.embedder(key)
        started = time.perf_counter()
        chunks = []
        for _ in range(20):
            chunks = chunk_blocks(
                markdown_doc.blocks,  # type: ignore[union-attr]
                tenant_id="t",
                source_id="s",
                version_id="v",
                count_tokens=embedder.count_tokens,
                policy=ChunkingPolicy(max_tokens=256),
            )
        elapsed = time.perf_counter() - started
        print(
            f"chunking ({key} tokenizer): {20 * len(chunks) / elapsed:.0f} chunks/s ({len(chunks)} chunks per doc)"
        )
        texts = [c.content for c in chunks][:64]
        started = time.perf_counter()
        embedder.embed_documents(texts)
        elapsed = time.perf_counter() - started
        tokens = sum(embedder.count_tokens(t) for t in texts) / len(texts)
        print(f"embedding {key}: {len(texts) / elapsed:.1f} chunks/s (~{tokens:.0f} tokens each)")


def freshness_round(
    platform: Platform, settings: GroundworkSettings, pdf: bytes, round_: int
) -> float:
    """Seconds from the PDF written to a new tenant's inbox to a keyword search
    finding it, the runs triggered at once."""
    model = settings.default_model_key
    groundwork = GroundworkResource(database=DATABASE, index_prefix=PREFIX)
    tenant = f"fresh-{uuid.uuid4().hex[:6]}"
    platform.catalog.ensure_tenant(tenant, tenant, model)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    folder = settings.inbox_dir / tenant
    folder.mkdir(parents=True, exist_ok=True)
    marker = f"freshness-{round_}-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    (folder / "report.pdf").write_bytes(pdf)
    (folder / "marker.md").write_text(f"# Marker\n\n{marker}\n")
    materialize_stages(TENANT_STAGES, tenant, instance, groundwork)
    materialize_stages(
        ["embeddings", "published_index"], tenant_model_key(tenant, model), instance, groundwork
    )
    outcome = hybrid_search(
        AccessScope(tenant, (f"tenant:{tenant}",)),
        SearchRequest("Quarterly Review Part 10", mode=SearchMode.KEYWORD),
        platform.search_engines(model),
    )
    assert isinstance(outcome, Found)
    seconds = time.perf_counter() - started
    shutil.rmtree(folder, ignore_errors=True)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    settings = settings_with_private_inbox()
    endpoints = ensure_engines(settings)
    platform = connect(settings, endpoints, database=DATABASE, index_prefix=PREFIX)

    pdf = report_pdf(pages=10)
    document = extract(pdf, "application/pdf", "report.pdf")
    assert not hasattr(document, "reason")
    print_chunking_and_embedding(platform)
    latencies = [freshness_round(platform, settings, pdf, r) for r in range(args.rounds)]
    print(
        f"freshness, 10-page text PDF -> searchable (runs triggered at once, {len(latencies)} rounds): "
        f"p50 {statistics.median(latencies):.1f} s, p95 {percentile(latencies, 95):.1f} s"
    )
    platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
