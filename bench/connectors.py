"""The S3 connector at scale (issue #34's goals): a bucket of N small objects
(100,000 by default, put concurrently), the first pass and ingest as setup,
then

1. a pass over the unchanged bucket: its time and its object reads (goal:
   <= 30 s, 0 reads);
2. one object changed and one deleted: found by the next pass; the time from
   that pass's start until the deletion is unsearchable and until the change
   is searchable (goal: <= 10 s), each watched while the pass runs. The ingest
   of what changed starts in process when the pass asks for it (its
   IngestTrigger, as soon as a page registered something), alongside the rest
   of the pass. In the running stack the pass is a `connector_pass` run and
   the ingest a `tenant_ingest` run; their launches are not in this figure.
   With --skip-ingest nothing is searchable: the figures are then when the
   deleted object's item stopped being served (made gone at its page, or
   deleted at the end) and when the pass asked for the ingest of the change.

    uv run python bench/connectors.py [--objects 100000] [--concurrency 32]
        [--skip-ingest | --setup-embedder hashed]

It uses the tests' kept engines and SeaweedFS (.groundwork-test, port 8343)
or starts them, in a database and bucket of its own; the bucket is reused by
the next run when it holds the objects already.
"""

from __future__ import annotations

import argparse
import io
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.engines import bench_platform
from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.port import Connector, FetchResult, ListingPage, SourceItem
from groundwork.connectors.s3_bucket import S3BucketSettings
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from groundwork.services.connector_sync import PassReport, run_pass
from resources.blobs.s3 import S3BlobStore
from resources.composition.platform import Platform
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.connectors.s3_bucket import S3BucketConnector
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from resources.postgres.connectors import PostgresConnectorCatalog
from testbed.hashed_vectors import hashed_vector

DATABASE = "groundwork_bench_connectors"
BUCKET = "groundwork-bench-connectors"
S3_PORT = 8343


class CountingConnector:
    """Counts what the service asks of the source (the figure is the source's
    side: a read is a GET of an object's bytes)."""

    def __init__(self, inner: Connector) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.complete_listing = inner.complete_listing
        self.sorted_listing = inner.sorted_listing
        self.lasting_locations = inner.lasting_locations
        self.reads = 0
        self.pages = 0

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        for page in self.inner.list_pages(cursor):
            self.pages += 1
            yield page

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        self.reads += 1
        return self.inner.fetch(item, known_version)


def key(objects: int, n: int) -> str:
    """Each bucket size under a prefix of its own, kept for the next run."""
    return f"n{objects}/archive/{n:06d}.md"


def body(n: int, revision: int = 0) -> bytes:
    return (
        f"# Note {n}\n\nRecord {n} of the archive, revision {revision}. "
        f"Its marker is zq{n}x{revision}k.\n"
    ).encode()


def populate(client: Any, objects: int, concurrency: int) -> float:
    """Puts the objects the bucket lacks; returns the seconds it took."""
    present = sum(
        page.get("KeyCount", 0)
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=f"n{objects}/"
        )
    )
    if present == objects:
        return 0.0
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(
            pool.map(
                lambda n: client.put_object(
                    Bucket=BUCKET, Key=key(objects, n), Body=io.BytesIO(body(n))
                ),
                range(objects),
            )
        )
    return time.perf_counter() - started


class HashedVectors:
    """The setup's stand-in for the serving model (`--setup-embedder hashed`):
    the real model's reference and tokenizer, vectors hashed from the words.
    The first ingest of 100,000 documents then takes minutes, not the hours
    the int8 model needs on two cores; what is measured afterwards (the
    change's ingest, the searches, which are keyword searches of a marker)
    runs with the real model."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.model = real.model

    def _vector(self, text: str) -> tuple[float, ...]:
        return hashed_vector(text.lower().split(), self.model.dimension)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return int(self.real.count_tokens(text))


def ingest(platform: Platform, tenant_id: str, embedder: Any = None) -> None:
    """What the tenant's ingest run does, in process (the stages the assets call)."""
    from groundwork.stages.chunks import chunk_pending
    from groundwork.stages.embeddings import embed_pending
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.keyword_index import keyword_index_pending
    from groundwork.stages.publication import publish_ready
    from groundwork.stages.summary_layer import summarize_pending

    model = platform.settings.default_model_key
    embedder = embedder or platform.embedder(model)
    vectors = platform.vector_index(model)
    extract_pending(platform.catalog, platform.blobs, tenant_id)
    chunk_pending(platform.catalog, tenant_id, embedder.count_tokens)
    summarize_pending(platform.catalog, tenant_id, embedder.count_tokens)
    keyword_index_pending(platform.catalog, platform.keywords, tenant_id)
    embed_pending(platform.catalog, vectors, embedder, tenant_id)
    publish_ready(platform.catalog, vectors, platform.keywords, tenant_id)


def found(platform: Platform, tenant_id: str, marker: str) -> bool:
    outcome = hybrid_search(
        AccessScope(tenant_id, (f"tenant:{tenant_id}",)),
        SearchRequest(marker, mode=SearchMode.KEYWORD, limit=3),
        platform.search_engines(platform.settings.default_model_key),
    )
    return isinstance(outcome, Found) and any(marker in h.chunk.body for h in outcome.hits)


class WatchedIngest:
    """The platform as the pass sees it, with an ingest trigger that starts
    the tenant's ingest in process when asked (once at a time; asked again
    meanwhile, it runs once more) and notes when it was first asked."""

    def __init__(self, platform: Platform, with_ingest: bool) -> None:
        self.platform = platform
        self.with_ingest = with_ingest
        self.asked_at: float | None = None
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        self._again = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.platform, name)

    def ingest_trigger(self) -> WatchedIngest:
        return self

    def request_ingest(self, tenant_id: str) -> None:
        with self._lock:
            if self.asked_at is None:
                self.asked_at = time.perf_counter()
            if not self.with_ingest:
                return
            if self._running is not None and self._running.is_alive():
                self._again = True
                return
            self._running = threading.Thread(target=self._ingest, args=(tenant_id,), daemon=True)
            self._running.start()

    def _ingest(self, tenant_id: str) -> None:
        while True:
            ingest(self.platform, tenant_id)
            with self._lock:
                if not self._again:
                    return
                self._again = False

    def join(self) -> None:
        if self._running is not None:
            self._running.join()


def timed_pass(
    platform: Platform,
    catalog: PostgresConnectorCatalog,
    instance: ConnectorInstance,
    connector: CountingConnector,
) -> tuple[PassReport, float]:
    started = time.perf_counter()
    report = run_pass(platform, catalog, instance, connector)
    return report, time.perf_counter() - started


def change_and_delete(
    platform: Platform,
    catalog: PostgresConnectorCatalog,
    instance: ConnectorInstance,
    connector: CountingConnector,
    objects: int,
    with_ingest: bool,
) -> None:
    """One object changed, one deleted; the next pass, then (with ingest)
    until the change is searchable and the deletion is not."""
    client = connector.inner.client  # type: ignore[attr-defined]
    changed, deleted = 1234 % objects, 4321 % objects
    client.put_object(Bucket=BUCKET, Key=key(objects, changed), Body=body(changed, 1))
    client.delete_object(Bucket=BUCKET, Key=key(objects, deleted))
    connector.reads = 0
    tenant = instance.tenant_id
    ports = WatchedIngest(platform, with_ingest)
    gone_key = key(objects, deleted)
    marks: dict[str, float] = {}
    done = threading.Event()

    def watch() -> None:
        """Polls, while the pass runs and after, for the two moments."""
        while not done.is_set() or len(marks) < 2:
            now = time.perf_counter()
            if "deleted" not in marks:
                if with_ingest:
                    if not found(platform, tenant, f"zq{deleted}x0k"):
                        marks["deleted"] = now
                else:
                    held = catalog.known_items(tenant, instance.instance_id, item_ids=[gone_key])
                    if not held or held[0].state == "gone":
                        marks["deleted"] = now
            if "changed" not in marks:
                if with_ingest and found(platform, tenant, f"zq{changed}x1k"):
                    marks["changed"] = now
                elif not with_ingest and ports.asked_at is not None:
                    marks["changed"] = ports.asked_at
            if now - started > 120:
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    started = time.perf_counter()
    watcher.start()
    report = run_pass(ports, catalog, instance, connector)  # type: ignore[arg-type]
    pass_done = time.perf_counter() - started
    done.set()
    watcher.join()
    ports.join()

    def since(mark: str) -> str:
        return f"{marks[mark] - started:.2f} s" if mark in marks else "not within 120 s"

    if with_ingest:
        seen = f"deletion unsearchable {since('deleted')}, change searchable {since('changed')}"
    else:
        seen = (
            f"deletion's item no longer served {since('deleted')}, ingest of the change asked "
            f"for {since('changed')} (nothing searchable: --skip-ingest)"
        )
    print(
        f"pass with 1 changed + 1 deleted: {pass_done:.2f} s (changed {report.changed}, "
        f"deleted {report.deleted}, reads {connector.reads}); after the pass started: {seen}"
    )
    # the bucket goes back to its first state for the next run
    client.put_object(Bucket=BUCKET, Key=key(objects, changed), Body=body(changed))
    client.put_object(Bucket=BUCKET, Key=key(objects, deleted), Body=body(deleted))


def bucket(settings: GroundworkSettings, objects: int, concurrency: int) -> EmbeddedSeaweedFS:
    seaweed = EmbeddedSeaweedFS(settings.home / "seaweedfs", S3_PORT)
    if not seaweed.is_running():
        seaweed.start()
    S3BlobStore(seaweed.client(), BUCKET).ensure_bucket()
    put_seconds = populate(seaweed.client(), objects, concurrency)
    print(f"objects: {objects}; concurrent puts: {put_seconds:.1f} s (0: reused)")
    return seaweed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--skip-ingest",
        action="store_true",
        help="no ingest (a first ingest of 100,000 documents takes hours on 2 cores): the passes "
        "are measured, the search latency is not",
    )
    parser.add_argument(
        "--setup-embedder",
        choices=("model", "hashed"),
        default="model",
        help="what embeds the first ingest (setup only): the serving model, or vectors hashed "
        "from the words (minutes for 100,000 documents); the change is embedded by the model",
    )
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("GROUNDWORK_HOME", str(PROJECT_ROOT / ".groundwork-test"))
    env.setdefault("GROUNDWORK_OPENSEARCH_PORT", "9211")
    env.setdefault("GROUNDWORK_OPENSEARCH_TRANSPORT_PORT", "9311")
    settings = GroundworkSettings.from_env(env)
    seaweed = bucket(settings, args.objects, args.concurrency)
    with bench_platform(settings, DATABASE, f"gwbenchcon-{uuid.uuid4().hex[:6]}") as platform:
        tenant = f"bench-con-{uuid.uuid4().hex[:6]}"
        platform.catalog.ensure_tenant(tenant, tenant, settings.default_model_key)
        catalog = PostgresConnectorCatalog(platform.pool)
        prefix = f"n{args.objects}/"
        instance = catalog.add_instance(
            ConnectorInstance(
                f"con_{uuid.uuid4().hex[:12]}",
                tenant,
                "s3",
                "archive",
                {"bucket": BUCKET, "prefix": prefix},
                {},
                (f"tenant:{tenant}",),
            )
        )
        s3 = S3BucketSettings(BUCKET, prefix=prefix, endpoint=seaweed.endpoint)
        connector = CountingConnector(S3BucketConnector(seaweed.client(), s3))
        first, seconds = timed_pass(platform, catalog, instance, connector)
        print(f"first pass: {seconds:.1f} s, registered {first.changed}, reads {connector.reads}")
        started = time.perf_counter()
        if not args.skip_ingest:
            real = platform.embedder(settings.default_model_key)
            setup = HashedVectors(real) if args.setup_embedder == "hashed" else real
            ingest(platform, tenant, setup)
            print(
                f"first ingest (setup, {args.setup_embedder} vectors): "
                f"{time.perf_counter() - started:.1f} s"
            )
        connector.reads = connector.pages = 0
        quiet, seconds = timed_pass(platform, catalog, instance, connector)
        print(
            f"pass over {quiet.seen} unchanged objects: {seconds:.2f} s, {connector.pages} pages, "
            f"object reads {connector.reads}, changed {quiet.changed}"
        )
        change_and_delete(
            platform, catalog, instance, connector, args.objects, not args.skip_ingest
        )


if __name__ == "__main__":
    main()
