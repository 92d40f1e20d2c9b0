"""The composition root: build every adapter from settings.

`ensure_engines` starts the embedded engines unless external URLs are set,
and reuses engines that are already running (every process of the platform,
Dagster run workers included, calls it; only a supervisor stops them).
"""

from __future__ import annotations

import hmac
import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from groundwork.embedding_cache import QueryEmbeddingCache
from groundwork.embedding_models import KNOWN_MODELS, EmbeddingModelRef, model_by_key
from groundwork.errors import EngineUnavailable
from groundwork.eval_records import EvalRuns
from groundwork.inspection import FileInspector
from groundwork.lifecycle import Indexes
from groundwork.ports import (
    AccessScope,
    BlobStore,
    EmbeddingProvider,
    IngestTrigger,
    KeywordIndex,
    MalwareScanner,
    VectorIndex,
    VisionProvider,
)
from groundwork.retrieval.kernel import SearchEngines
from groundwork.retrieval.rerank import Reranker
from groundwork.services.health import KeywordClusterState, ReplicaState
from groundwork.summaries import Summarizer
from groundwork.upload_staging import UploadStaging

if TYPE_CHECKING:
    from groundwork.services.health import HealthProbes
    from groundwork.services.platform import PlatformPorts, WalledPlatform
from resources.composition.blobs import (
    build_blob_store,
    build_upload_staging,
    embedded_seaweedfs,
)
from resources.composition.engine_auth import (
    external_database_url,
    opensearch_client_options,
    opensearch_front,
    postgres_listen,
)
from resources.composition.remote_models import (
    configured_reranker,
    is_remote_model,
    remote_embedder,
)
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.composition.signing_key import signing_secret
from resources.engines.clamd import EmbeddedClamd
from resources.engines.opensearch import EmbeddedOpenSearch, shard_limit_for_heap
from resources.engines.postgres import EmbeddedPostgres
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from resources.inspection.malware_clamd import ClamdScanner
from resources.inspection.sniffing import LibmagicInspector
from resources.models.embeddings import load_embedding_provider
from resources.models.llm import configured_summarizer
from resources.models.vision import configured_vision
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from resources.orchestration.ingest_trigger import DagsterIngestTrigger, NoIngestTrigger
from resources.postgres.artifacts import PostgresArtifacts
from resources.postgres.catalog import PostgresCatalog
from resources.postgres.catalog_parts.reading import PublishedChunkReader
from resources.postgres.database import ensure_database, migrate, open_pool, with_database
from resources.postgres.eval_runs import PostgresEvalRuns
from resources.postgres.file_metadata import PostgresFileMetadata
from resources.postgres.keyword_index import PostgresKeywordIndex
from resources.postgres.read_replica import ReadReplica
from resources.postgres.tenant_wall import ConnectionSource, TenantWalledPool, shared_transaction
from resources.postgres.vector_index import PgVectorIndex

#: The FileInspector port's adapter (groundwork.inspection): stateless, so one serves all.
_INSPECTOR: FileInspector = LibmagicInspector()


@dataclass(frozen=True, slots=True)
class EngineEndpoints:
    server_url: str  # libpq URL of the server's maintenance database
    opensearch_url: str | None
    postgres: EmbeddedPostgres | None = None
    opensearch: EmbeddedOpenSearch | None = None
    #: the S3 endpoint of the blob store (GROUNDWORK_BLOB_BACKEND=s3), and the
    #: embedded server when the project started it
    s3_endpoint: str | None = None
    seaweedfs: EmbeddedSeaweedFS | None = None

    def database_url(self, database: str) -> str:
        return with_database(self.server_url, database)


def embedded_opensearch(settings: GroundworkSettings) -> EmbeddedOpenSearch:
    return EmbeddedOpenSearch(
        home=settings.opensearch_home,
        launcher_dir=PROJECT_ROOT / "engines" / "opensearch",
        http_port=settings.opensearch_http_port,
        transport_port=settings.opensearch_transport_port,
        heap=settings.opensearch_heap,
        node_settings={
            "cluster.max_shards_per_node": str(shard_limit_for_heap(settings.opensearch_heap))
        },
        front=opensearch_front(settings),
    )


def ensure_engines(settings: GroundworkSettings) -> EngineEndpoints:
    """Start the embedded engines, or reuse them. Under the supervisor
    (`engines_managed`) a process only connects to running engines and says so
    when one is down: the supervisor alone starts them."""
    postgres: EmbeddedPostgres | None = None
    if settings.database_url:
        server_url = external_database_url(settings)
    else:
        postgres = EmbeddedPostgres(settings.pgdata, postgres_listen(settings))
        if settings.engines_managed and not postgres.is_running():
            raise EngineUnavailable("PostgreSQL is down; the supervisor is starting it again")
        server_url = postgres.start()
    opensearch: EmbeddedOpenSearch | None = None
    opensearch_url: str | None = None
    if settings.keyword_backend == "opensearch":
        if settings.opensearch_url:
            opensearch_url = settings.opensearch_url
        else:
            opensearch = embedded_opensearch(settings)
            if settings.engines_managed and not opensearch.is_running():
                raise EngineUnavailable("OpenSearch is down; the supervisor is starting it again")
            opensearch_url = opensearch.start()
    seaweedfs: EmbeddedSeaweedFS | None = None
    s3_endpoint = settings.s3_endpoint
    if settings.blob_backend == "s3" and not s3_endpoint:
        seaweedfs = embedded_seaweedfs(settings)
        if settings.engines_managed and not seaweedfs.is_running():
            raise EngineUnavailable("SeaweedFS is down; the supervisor is starting it again")
        s3_endpoint = seaweedfs.start()
    return EngineEndpoints(server_url, opensearch_url, postgres, opensearch, s3_endpoint, seaweedfs)


#: the scope of the keyword probe: a tenant no index has, so the search is cheap
HEALTH_SCOPE = AccessScope("health-probe", ("health-probe",))

#: tenant views kept per platform (a few objects each); beyond it the cache starts over
MAX_TENANT_VIEWS = 4096


@dataclass
class Platform:
    settings: GroundworkSettings
    database_url: str
    pool: ConnectionSource
    catalog: PostgresCatalog
    blobs: BlobStore
    keywords: KeywordIndex
    _embedders: dict[str, EmbeddingProvider] = field(default_factory=dict)
    _vectors: dict[str, PgVectorIndex] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    tenant_wall: str | None = None  # set on a view made by `for_tenant`
    #: the read replica the vector leg may use (GROUNDWORK_DATABASE_REPLICA_URL)
    replica: ReadReplica | None = None
    _trigger: IngestTrigger | None = None
    #: a request-serving process (API, MCP): embeds queries one at a time
    serving: bool = False
    #: not an init field: a copy made with dataclasses.replace (other settings)
    #: starts with no views, never serving views of the platform it was copied from
    _views: dict[str, Platform] = field(default_factory=dict, init=False)
    _approval: bytes | None = field(default=None, init=False)
    _rerankers: tuple[Reranker, Reranker | None] | None = field(default=None, init=False)
    _eval_runs: EvalRuns | None = field(default=None, init=False)
    #: shared with the tenant views (`_make_tenant_view` hands it on)
    _staging: UploadStaging | None = None

    def ingest_trigger(self) -> IngestTrigger:
        """One per platform (shared by tenant views): it remembers each tenant's
        queued run, so a burst of registrations queues one run, not one each."""
        with self._lock:
            if self._trigger is None:
                self._trigger = (
                    DagsterIngestTrigger(self.settings.dagster_url)
                    if self.settings.dagster_url
                    else NoIngestTrigger()
                )
            return self._trigger

    def embedder(self, model_key: str) -> EmbeddingProvider:
        with self._lock:
            if model_key not in self._embedders:
                model = model_by_key(model_key)
                provider: EmbeddingProvider = (
                    remote_embedder(model, self.settings)
                    if is_remote_model(model)
                    else load_embedding_provider(
                        model,
                        self.settings.models_dir,
                        serving=self.serving,
                        device=self.settings.embedding_device,
                    )
                )
                # a serving process sees repeated queries; ingest never repeats one
                entries = self.settings.query_cache_entries
                self._embedders[model_key] = (
                    QueryEmbeddingCache(provider, entries) if self.serving and entries else provider
                )
            return self._embedders[model_key]

    def vector_index(self, model_key: str) -> VectorIndex:
        with self._lock:
            if model_key not in self._vectors:
                index = PgVectorIndex(self.pool, model_by_key(model_key), replica=self.replica)
                index.ensure_schema()
                self._vectors[model_key] = index
            return self._vectors[model_key]

    def indexes(self) -> Indexes:
        """Every store a chunk lives in: the keyword index and one vector index per known model."""
        return Indexes(self.keywords, tuple(self.vector_index(key) for key in sorted(KNOWN_MODELS)))

    def model(self, model_key: str) -> EmbeddingModelRef:
        return model_by_key(model_key)

    def serving_model(self, tenant_id: str) -> str:
        tenant = self.catalog.get_tenant(tenant_id)
        return tenant.active_model if tenant else self.settings.default_model_key

    def summarizer(self) -> Summarizer | None:
        return configured_summarizer()

    def vision(self) -> VisionProvider:
        return configured_vision()

    def sniff_media_type(self, data: bytes, filename: str) -> str:
        return _INSPECTOR.media_type(data, filename)

    def sniff_file(self, path: Path | BinaryIO, filename: str) -> str:
        return _INSPECTOR.media_type_of_path(path, filename)

    def shared_transaction(self) -> AbstractContextManager[None]:
        """One transaction per walled pool for the block (tenant_wall.shared_transaction);
        on the unwalled platform, whose checkouts hold no wall, each its own."""
        return shared_transaction() if self.tenant_wall is not None else nullcontext()

    def approval_secret(self) -> bytes:
        """Derived from the signing key, so an approval token can never pass as a
        file reference. Read once per platform: every search seals a turn with
        it, and reading the key file each time was 2% of the API's CPU under
        load (py-spy); a rotated key takes effect at restart, as any secret."""
        if self._approval is None:
            self._approval = hmac.new(
                signing_secret(self.settings), b"artifact-approval", "sha256"
            ).digest()
        return self._approval

    def reference_secret(self) -> bytes:
        return signing_secret(self.settings)

    def upload_staging(self) -> UploadStaging:
        """One per platform (tenant views share it): the S3 staging keeps each
        session's running SHA-256 between its parts."""
        with self._lock:
            if self._staging is None:
                self._staging = build_upload_staging(self.settings, self.blobs)
            return self._staging

    def search_engines(self, model_key: str) -> SearchEngines:
        return SearchEngines(
            embedder=self.embedder(model_key),
            vectors=self.vector_index(model_key),
            keywords=self.keywords,
            reader=PublishedChunkReader(self.catalog, model_key),
            reranker=self.rerankers()[0],
            fallback_reranker=self.rerankers()[1],
        )

    def operator_token(self) -> str | None:
        """The bearer token of GET /metrics (GROUNDWORK_METRICS_TOKEN); None: off."""
        return self.settings.metrics_token

    def rerankers(self) -> tuple[Reranker, Reranker | None]:
        """One per platform: a remote reranker's circuit breaker and connections
        outlive a single search."""
        with self._lock:
            if self._rerankers is None:
                self._rerankers = configured_reranker(self.settings)
            return self._rerankers

    @property
    def artifacts(self) -> PostgresArtifacts:
        return PostgresArtifacts(self.pool)

    @property
    def files(self) -> PostgresFileMetadata:
        return PostgresFileMetadata(self.pool)

    @property
    def eval_runs(self) -> EvalRuns:
        """Eval suites and runs, built once per platform (a tenant view's behind
        its wall): every eval path and the publication gate read this one."""
        if self._eval_runs is None:
            self._eval_runs = PostgresEvalRuns(self.pool)
        return self._eval_runs

    def scanner(self) -> MalwareScanner | None:
        """The malware scanner when scanning is on (GROUNDWORK_MALWARE_SCAN=clamd):
        an external clamd socket, or a clamd the project starts on its signatures."""
        if self.settings.malware_scan == "off":
            return None
        if self.settings.clamd_socket is not None:
            return ClamdScanner(self.settings.clamd_socket)
        clamd = EmbeddedClamd(self.settings.home / "clamd", self.settings.clamd_database)
        clamd.start()
        return clamd.scanner()

    def for_tenant(self, tenant_id: str) -> Platform:
        """A view of the platform whose Postgres work runs behind the tenant's
        row-level-security wall (request handling uses it; pipelines do not).
        Models, blobs and the OpenSearch client are shared with this platform.
        A view holds no request state, so each tenant's is made once and kept
        (bounded): a request then builds nothing."""
        if self.tenant_wall is not None:
            raise ValueError("already a tenant view")
        view = self._views.get(tenant_id)
        if view is None:
            view = self._make_tenant_view(tenant_id)
            if len(self._views) >= MAX_TENANT_VIEWS:
                self._views.clear()
            self._views[tenant_id] = view  # a racing duplicate is equivalent, and harmless
        return view

    def known_tenant_view(self, tenant_id: str) -> Platform | None:
        """The tenant's view if made already (building one may touch the database)."""
        return self._views.get(tenant_id)

    def _make_tenant_view(self, tenant_id: str) -> Platform:
        walled = TenantWalledPool(self.pool, tenant_id)  # type: ignore[arg-type]
        replica = self.replica.walled(tenant_id) if self.replica is not None else None
        keywords: KeywordIndex = (
            PostgresKeywordIndex(walled)
            if isinstance(self.keywords, PostgresKeywordIndex)
            else self.keywords
        )
        vectors = {key: self.vector_index(key) for key in sorted(KNOWN_MODELS)}
        view = Platform(
            settings=self.settings,
            database_url=self.database_url,
            pool=walled,
            catalog=PostgresCatalog(walled),
            blobs=self.blobs,
            keywords=keywords,
            _embedders=self._embedders,
            _lock=self._lock,
            tenant_wall=tenant_id,
            replica=replica,
            _trigger=self.ingest_trigger(),
            serving=self.serving,
            _staging=self.upload_staging(),
        )
        view._vectors = {  # type: ignore[attr-defined]
            key: PgVectorIndex(walled, index.model, replica=replica)
            for key, index in vectors.items()
        }
        return view

    # health probes (groundwork.services.health states what each result means)
    def probe_database(self) -> None:
        self.catalog.list_tenants()

    def probe_keyword_index(self) -> None:
        self.keywords.search(HEALTH_SCOPE, "health", 1)

    def replica_state(self) -> ReplicaState | None:
        return self.replica.state(self.pool) if self.replica is not None else None

    def keyword_cluster_state(self) -> KeywordClusterState | None:
        if isinstance(self.keywords, OpenSearchKeywordIndex):
            return self.keywords.cluster_state()
        return None  # PostgreSQL full text: no cluster of its own

    def close(self) -> None:
        if self.tenant_wall is None:
            self.pool.close()  # type: ignore[attr-defined]
            if self.replica is not None:
                self.replica.close()


def connect(
    settings: GroundworkSettings,
    endpoints: EngineEndpoints | None = None,
    database: str | None = None,
    index_prefix: str | None = None,
    serving: bool = False,
) -> Platform:
    """Connect to (and migrate) the platform database; build every adapter.
    `serving`: for a request-serving process (API, MCP)."""
    endpoints = endpoints or ensure_engines(settings)
    database = database or settings.database_name
    database_url = ensure_database(endpoints.server_url, database)
    migrate(database_url)
    pool = open_pool(database_url)
    keywords: KeywordIndex
    if settings.keyword_backend == "opensearch":
        assert endpoints.opensearch_url is not None
        keywords = OpenSearchKeywordIndex(
            client_for(endpoints.opensearch_url, **opensearch_client_options(settings)),
            index_prefix or settings.index_prefix,
            replicas=settings.opensearch_replicas,
        )
    else:
        keywords = PostgresKeywordIndex(pool)
    keywords.ensure_schema()
    replica = None
    if settings.database_replica_url:
        # not waited for: a replica that is down, or has not replayed the
        # database's creation yet, leaves the primary answering
        replica_url = with_database(settings.database_replica_url, database)
        replica = ReadReplica(open_pool(replica_url, wait=False))
    return Platform(
        settings=settings,
        database_url=database_url,
        pool=pool,
        catalog=PostgresCatalog(pool),
        blobs=build_blob_store(settings, endpoints.s3_endpoint),
        keywords=keywords,
        serving=serving,
        replica=replica,
    )


if TYPE_CHECKING:

    def _the_composition_root_is_the_ports(platform: Platform) -> None:
        """mypy proves the services and the tool dispatcher get exactly what
        their Protocols ask for from this composition root."""
        _ports: PlatformPorts = platform
        _walled: WalledPlatform = platform
        _health: HealthProbes = platform
