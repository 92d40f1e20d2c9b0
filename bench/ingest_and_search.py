"""Ingest throughput (documents/s through the Dagster assets) and /v1/search
latency (p50/p95/p99 over HTTP on loopback), on the real engines.

    uv run python bench/ingest_and_search.py                  # synthetic corpus (300 docs)
    uv run python bench/ingest_and_search.py --docs 1000
    uv run python bench/ingest_and_search.py --beir ../shared/data/scifact   # + nDCG@10 / Recall@100
    uv run python bench/ingest_and_search.py --docs 400 --pdf-share 1.0      # as PDFs
    taskset -c 0 uv run python bench/ingest_and_search.py ...                # on one core

PDFs are rendered from the synthetic Markdown by the project's own renderer,
so extraction (one killable worker per available core) has real parsing to do;
`taskset` narrows the cores the pipeline may use, to show how it scales.

Uses its own database (groundwork_bench) and index prefix (gwbench) on the
engines under GROUNDWORK_HOME; stops engines it had to start.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
import uuid
from pathlib import Path

import dagster as dg  # noqa: E402
import httpx  # noqa: E402

from bench.engines import bench_platform  # noqa: E402
from bench.ingestion import (  # noqa: E402
    TENANT_STAGES,
    bare_embedding_seconds,
    embedding_texts,
    materialize_stages,
    settings_with_private_inbox,
)
from bench.timing import percentile  # noqa: E402
from evals.beir import load_corpus, load_qrels, load_queries  # noqa: E402
from evals.metrics import ndcg_at_k, recall_at_k  # noqa: E402
from groundwork.extract.markdown import markdown_blocks  # noqa: E402
from groundwork.ports import AccessScope  # noqa: E402
from groundwork.render.pdf import render_pdf  # noqa: E402
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search  # noqa: E402
from groundwork.retrieval.outcome import Found  # noqa: E402
from resources.composition.machine import available_cores  # noqa: E402
from resources.composition.platform import Platform  # noqa: E402
from resources.dagster_glue.platform_resource import GroundworkResource  # noqa: E402
from testbed.api_server import serve_api  # noqa: E402

DATABASE = "groundwork_bench"
PREFIX = "gwbench"
TOPICS = [
    ("storage", ["quota", "volume", "snapshot", "replica", "latency", "throughput", "disk"]),
    ("finance", ["revenue", "budget", "forecast", "margin", "invoice", "expense", "audit"]),
    ("people", ["vacation", "onboarding", "hiring", "benefits", "training", "review", "office"]),
    ("security", ["badge", "password", "firewall", "incident", "certificate", "access", "token"]),
]


def synthetic_corpus(n: int, seed: int = 7) -> dict[str, str]:
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    for i in range(n):
        topic, words = TOPICS[i % len(TOPICS)]
        code = f"ERR-{1000 + i}"
        sections = []
        for s in range(3):
            sentences = [
                f"The {rng.choice(words)} {rng.choice(words)} policy applies to team {rng.randint(1, 40)}"
                f" and changes every {rng.randint(2, 12)} months."
                for _ in range(rng.randint(3, 8))
            ]
            sections.append(
                f"## Section {s + 1}: {rng.choice(words).title()}\n\n" + " ".join(sentences)
            )
        docs[f"doc-{i:05d}.md"] = (
            f"# {topic.title()} note {i}\n\n{code} is reported when the {rng.choice(words)} check fails.\n\n"
            + "\n\n".join(sections)
            + "\n"
        )
    return docs


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--beir", type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--pdf-share", type=float, default=0.0, help="share of documents as PDF")
    return parser.parse_args()


def write_inbox(corpus: dict[str, str], folder: Path, pdf_share: float) -> int:
    """The corpus into the tenant's inbox folder, the first `pdf_share` of it
    rendered as PDFs; how many PDFs."""
    folder.mkdir(parents=True, exist_ok=True)
    pdfs = int(round(pdf_share * len(corpus)))
    for n, (name, text) in enumerate(corpus.items()):
        if n < pdfs:
            blocks = markdown_blocks(text)
            data, _ = render_pdf(name, blocks)
            (folder / name.replace(".md", ".pdf")).write_bytes(data)
        else:
            (folder / name).write_text(text)
    return pdfs


def ingest(tenant: str) -> tuple[dg.ExecuteInProcessResult, float]:
    """One run, as production does it: register -> extract -> chunk -> keyword
    index -> embed + publish the serving model (serving_index); its seconds."""
    groundwork = GroundworkResource(database=DATABASE, index_prefix=PREFIX)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    started = time.perf_counter()
    result = materialize_stages([*TENANT_STAGES, "serving_index"], tenant, instance, groundwork)
    return result, time.perf_counter() - started


def print_stage_times(result: dg.ExecuteInProcessResult) -> None:
    for event in result.get_asset_materialization_events():
        mat = event.step_materialization_data.materialization
        seconds = mat.metadata.get("seconds")
        items = mat.metadata.get("items_written")
        print(
            f"  {mat.asset_key.to_user_string():22s} {seconds.value if seconds else 0:8.2f} s"
            f"  items {items.value if items else '-'}"
        )


def print_bare_embedding(
    platform: Platform, tenant: str, model: str, ingest_seconds: float
) -> None:
    """The floor: embedding the same chunk texts with the same model, nothing
    else (issue 13's target is register -> publish within 1.3x of this)."""
    with platform.pool.connection() as conn:
        texts = embedding_texts(
            conn.execute(
                "SELECT heading_path, body FROM chunks WHERE tenant_id = %s ORDER BY chunk_id",
                (tenant,),
            ).fetchall()
        )
    bare = bare_embedding_seconds(platform.embedder(model), texts)
    print(
        f"bare embedding of the same {len(texts)} chunk texts: {bare:.1f} s; "
        f"register -> publish / bare embedding = {ingest_seconds / bare:.2f}x"
    )


def print_beir_relevance(
    platform: Platform, tenant: str, model: str, beir: Path, split: str
) -> None:
    """nDCG@10 and Recall@100 of each search mode over the BEIR queries."""
    queries = load_queries(beir)
    qrels = load_qrels(beir, split)
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    engines = platform.search_engines(model)
    for mode in SearchMode:
        ndcgs, recalls = [], []
        for query_id, relevant in qrels.items():
            outcome = hybrid_search(
                scope,
                SearchRequest(queries[query_id], limit=100, candidates=100, mode=mode),
                engines,
            )
            ranked: list[str] = []
            if isinstance(outcome, Found):
                for hit in outcome.hits:
                    doc = hit.chunk.filename.rsplit(".", 1)[0]
                    if doc not in ranked:
                        ranked.append(doc)
            ndcgs.append(ndcg_at_k(ranked, relevant, 10))
            recalls.append(recall_at_k(ranked, relevant, 100))
        print(
            f"  {mode.value:8s} nDCG@10 {statistics.mean(ndcgs):.3f}  Recall@100 {statistics.mean(recalls):.3f}"
            f"  ({len(ndcgs)} queries, {split})"
        )


def print_identifier_mrr(platform: Platform, tenant: str, model: str, documents: int) -> None:
    """Identifier queries: every synthetic document carries a unique ERR-code."""
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    engines = platform.search_engines(model)
    for label, mode, rerank in (
        ("keyword", SearchMode.KEYWORD, False),
        ("vector", SearchMode.VECTOR, False),
        ("hybrid", SearchMode.HYBRID, False),
        ("hybrid+rerank", SearchMode.HYBRID, True),
    ):
        reciprocal = []
        for i in range(0, documents, max(1, documents // 100)):
            outcome = hybrid_search(
                scope,
                SearchRequest(f"what does ERR-{1000 + i} mean", limit=10, mode=mode, rerank=rerank),
                engines,
            )
            ranked = (
                [h.chunk.filename.rsplit(".", 1)[0] for h in outcome.hits]
                if isinstance(outcome, Found)
                else []
            )
            target = f"doc-{i:05d}"  # written as .md or .pdf
            reciprocal.append(1.0 / (ranked.index(target) + 1) if target in ranked else 0.0)
        print(
            f"  identifier queries {label:14s} MRR@10 {statistics.mean(reciprocal):.3f} ({len(reciprocal)} queries)"
        )


def latency_queries(beir: Path | None) -> list[str]:
    """The BEIR queries, or policy questions in the synthetic corpus's words, shuffled."""
    rng = random.Random(11)
    texts = (
        list(load_queries(beir).values())
        if beir
        else [
            f"{rng.choice(words)} {rng.choice(words)} policy for team {rng.randint(1, 40)}"
            for _, words in TOPICS
            for _ in range(100)
        ]
    )
    rng.shuffle(texts)
    return texts


def print_api_latency(base: str, key: str, texts: list[str], count: int) -> None:
    """/v1/search from one client over loopback, after ten warm-up queries."""
    latencies: list[float] = []
    errors = 0
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        for text in texts[:10]:
            client.post("/v1/search", json={"query": text})
        for text in texts[:count]:
            t0 = time.perf_counter()
            response = client.post("/v1/search", json={"query": text, "limit": 10})
            latencies.append((time.perf_counter() - t0) * 1000)
            errors += response.status_code != 200
    print(
        f"/v1/search, 1 client, {len(latencies)} queries: p50 {percentile(latencies, 50):.1f} ms, "
        f"p95 {percentile(latencies, 95):.1f} ms, p99 {percentile(latencies, 99):.1f} ms, errors {errors}"
    )


def measure(
    args: argparse.Namespace, platform: Platform, model: str, tenant: str, folder: Path
) -> None:
    """The corpus through the tenant's inbox and the assets, then what the run
    and its searches give."""
    if args.beir:
        corpus = {f"{d.doc_id}.md": d.to_markdown() for d in load_corpus(args.beir)}
    else:
        corpus = synthetic_corpus(args.docs)
    pdfs = write_inbox(corpus, folder, args.pdf_share)
    result, ingest_seconds = ingest(tenant)
    print(f"cores available: {available_cores()}, PDFs: {pdfs}")
    print(
        f"corpus: {len(corpus)} documents ({'BEIR ' + str(args.beir) if args.beir else 'synthetic'}), model {model}"
    )
    print_stage_times(result)
    print(f"ingest: {ingest_seconds:.1f} s = {len(corpus) / ingest_seconds:.1f} documents/s")
    print_bare_embedding(platform, tenant, model, ingest_seconds)
    if args.beir:
        print_beir_relevance(platform, tenant, model, args.beir, args.split)
    else:
        print_identifier_mrr(platform, tenant, model, len(corpus))
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "bench")
    with serve_api(args.port, DATABASE, PREFIX) as base:
        print_api_latency(base, key, latency_queries(args.beir), args.queries)


def main() -> int:
    args = parse_args()
    settings = settings_with_private_inbox()
    with bench_platform(settings, DATABASE, PREFIX) as platform:
        model = settings.default_model_key
        tenant = f"bench-{uuid.uuid4().hex[:6]}"
        platform.catalog.ensure_tenant(tenant, tenant, model)
        folder = settings.inbox_dir / tenant
        try:
            measure(args, platform, model, tenant, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
