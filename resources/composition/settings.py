"""Settings from the environment, read when called (never at import).

An external URL replaces an embedded engine: GROUNDWORK_DATABASE_URL for
PostgreSQL, GROUNDWORK_OPENSEARCH_URL for OpenSearch. Without them the
project's embedded engines start under GROUNDWORK_HOME.
GROUNDWORK_BLOB_BACKEND=s3 keeps file bytes in an S3-compatible bucket:
GROUNDWORK_S3_ENDPOINT (with GROUNDWORK_S3_ACCESS_KEY_ID/_SECRET_ACCESS_KEY)
names one; without it the project starts SeaweedFS under GROUNDWORK_HOME
(docs/object-storage.md). GROUNDWORK_DATABASE_REPLICA_URL (optional) names a streaming replica of that
PostgreSQL for the search path's vector leg (resources/postgres/read_replica.py).
GROUNDWORK_POSTGRES_LISTEN / GROUNDWORK_OPENSEARCH_LISTEN open the embedded
engines beyond their socket or loopback, always with TLS and credentials
(docs/several-hosts.md); secrets are never in repr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.embedding_models import DEFAULT_MODEL_KEY, model_by_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class GroundworkSettings:
    home: Path
    database_url: str | None
    opensearch_url: str | None
    opensearch_http_port: int
    opensearch_transport_port: int
    opensearch_heap: str
    keyword_backend: str  # "opensearch" or "postgres"
    index_prefix: str
    database_name: str
    default_model_key: str
    models_dir: Path
    inbox_dir: Path
    api_port: int
    dagster_port: int
    mcp_port: int = 8089
    #: API worker processes. One by default: measured on this 2-core machine
    #: (bench/search_load.py, SciFact), two workers served the same ~70 req/s at
    #: 8 clients with twice the memory; the engines and the query embedding,
    #: not the interpreter lock, use the cores. More cores: raise it.
    api_workers: int = 1
    malware_scan: str = "off"  # "off" or "clamd"
    clamd_socket: Path | None = None  # an external clamd; else the project starts one
    clamd_database: Path = Path("/var/lib/clamav")
    #: set by the supervisor in its children: only the supervisor starts engines,
    #: so a service never races it (two OpenSearch nodes fighting over one data
    #: directory crash-looped the MCP server after an engine was killed)
    engines_managed: bool = False
    #: the Dagster webserver the API asks for ingest runs (set by the supervisor)
    dagster_url: str | None = None
    #: a streaming replica's server URL (the database name is applied as for
    #: database_url): the vector leg of searches reads it; everything else, and
    #: every write, stays on the primary. Unset: everything on the primary.
    database_replica_url: str | None = None
    #: replicas of each tenant's keyword index; None: one as soon as the cluster
    #: has a second data node, none on a single node (auto-expanded 0-1)
    opensearch_replicas: int | None = None
    #: query embeddings a serving process keeps (0: none); about 1.6 KB each
    query_cache_entries: int = 4096
    #: "cuda": onnxruntime's CUDA execution provider when present (onnxruntime-gpu),
    #: else CPU with a warning recorded in the embedding step's metadata
    embedding_device: str = "cpu"
    #: where file bytes live: "filesystem" (GROUNDWORK_HOME/blobs, one host)
    #: or "s3" (a bucket every host reaches by URL)
    blob_backend: str = "filesystem"
    #: an S3-compatible endpoint; None with the s3 backend: the embedded SeaweedFS
    s3_endpoint: str | None = None
    s3_bucket: str = "groundwork"
    s3_region: str = "us-east-1"
    #: a folder of the bucket the platform keeps to ("" = the whole bucket)
    s3_prefix: str = ""
    #: path-style addressing (http://host/bucket/key): what SeaweedFS and MinIO
    #: serve without wildcard DNS; AWS accepts it too
    s3_path_style: bool = True
    s3_access_key_id: str | None = None
    #: never in repr: settings are printed in logs and tracebacks
    s3_secret_access_key: str | None = field(default=None, repr=False)
    s3_port: int = 8333  # the embedded SeaweedFS's S3 port (it uses the next three too)
    #: "filesystem" while `groundwork blobs migrate --to s3` finishes: the S3
    #: store's reads fall back to GROUNDWORK_HOME/blobs (no read fails mid-move)
    blob_read_fallback: str = ""
    #: the local reranker: "identifier" (the default), or "learned", the offline
    #: learned reranker (groundwork/retrieval/learned_rank.py, its shipped
    #: weights beside it; opt-in: it changes every tenant's order, measured on
    #: SciFact and SQuAD only, bench/README.md#learned-reranker)
    reranker: str = "identifier"
    #: a reranker the user runs (`/rerank`, Cohere/Jina/vLLM or TEI format); off when unset
    rerank_url: str | None = None
    rerank_model: str = ""
    rerank_format: str = "cohere"
    rerank_timeout: float = 2.0
    #: an OpenAI-compatible `/v1/embeddings` endpoint filling the openai_compatible_<dim> slots
    embeddings_url: str | None = None
    embeddings_model: str = ""
    #: the operator's bearer token for GET /metrics; unset: metrics are off
    metrics_token: str | None = field(default=None, repr=False)
    #: host:port the embedded PostgreSQL is reached at over TCP (TLS and a
    #: SCRAM password: resources/engines/postgres.py); unset: its socket only
    postgres_listen: str | None = None
    #: the `postgres` role's password: the embedded server's with
    #: postgres_listen (else one made once under the home), or the one given
    #: with GROUNDWORK_DATABASE_URL (a worker host's); written to a 0600 libpq
    #: passfile that the URL names, never into a URL
    database_password: str | None = field(default=None, repr=False)
    #: host:port of the authenticating front (HTTPS + basic auth, nginx) the
    #: embedded OpenSearch gets; the node itself stays on 127.0.0.1
    opensearch_listen: str | None = None
    #: the OpenSearch user and password the platform sends (to the embedded
    #: front, or to GROUNDWORK_OPENSEARCH_URL)
    opensearch_user: str = "groundwork"
    opensearch_password: str | None = field(default=None, repr=False)
    #: the CA certificate that signed the fronts' certificates (the embedded
    #: ones: <home>/engine-tls/ca.crt); copy it to every host
    opensearch_ca: Path | None = None
    #: the supervisor runs an inbox watcher that requests runs as files arrive
    #: (GROUNDWORK_INBOX_WATCHER=1, set for its children): the inbox sensor
    #: then ticks once per fallback interval instead of on every daemon pass
    inbox_watcher: bool = False
    #: an OTLP/HTTP receiver's base URL (http://host:4318): spans are exported to
    #: its /v1/traces (resources/composition/tracing.py); unset, tracing is off
    otlp_endpoint: str | None = None
    #: the share of traces recorded, by trace id (ParentBased(TraceIdRatioBased)):
    #: a caller's sampled trace is followed whatever the ratio
    trace_sample_ratio: float = 0.1
    #: a tenant's backlog older than this fails the backlog_freshness check
    #: (groundwork.services.backlog.FRESHNESS_TARGET_SECONDS)
    freshness_target_seconds: float = 900.0

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def opensearch_home(self) -> Path:
        return self.home / "opensearch"

    @property
    def blob_dir(self) -> Path:
        return self.home / "blobs"

    @property
    def seaweedfs_home(self) -> Path:
        return self.home / "seaweedfs"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GroundworkSettings:
        env = os.environ if env is None else env
        home = Path(env.get("GROUNDWORK_HOME", str(PROJECT_ROOT / ".groundwork"))).resolve()
        model_key = env.get("GROUNDWORK_DEFAULT_MODEL", DEFAULT_MODEL_KEY)
        model_by_key(model_key)  # refuse an unknown model at start, not at first query
        backend = env.get("GROUNDWORK_KEYWORD_BACKEND", "opensearch")
        if backend not in ("opensearch", "postgres"):
            raise ValueError("GROUNDWORK_KEYWORD_BACKEND must be 'opensearch' or 'postgres'")
        return cls(
            home=home,
            database_url=env.get("GROUNDWORK_DATABASE_URL") or None,
            opensearch_url=env.get("GROUNDWORK_OPENSEARCH_URL") or None,
            opensearch_http_port=int(env.get("GROUNDWORK_OPENSEARCH_PORT", "9201")),
            opensearch_transport_port=int(env.get("GROUNDWORK_OPENSEARCH_TRANSPORT_PORT", "9301")),
            # 1 GiB (the distribution's default too): 1,369 tenant indexes
            # within half of it (resources/engines/opensearch.py), 512 MiB only 593
            opensearch_heap=env.get("GROUNDWORK_OPENSEARCH_HEAP", "1g"),
            keyword_backend=backend,
            index_prefix=env.get("GROUNDWORK_INDEX_PREFIX", "groundwork"),
            database_name=env.get("GROUNDWORK_DATABASE_NAME", "groundwork"),
            default_model_key=model_key,
            models_dir=Path(
                env.get("GROUNDWORK_MODELS_DIR", str(PROJECT_ROOT / "engines/models/target/jars"))
            ),
            inbox_dir=Path(env.get("GROUNDWORK_INBOX", str(home / "inbox"))),
            api_port=int(env.get("GROUNDWORK_API_PORT", "8088")),
            dagster_port=int(env.get("GROUNDWORK_DAGSTER_PORT", "3000")),
            mcp_port=int(env.get("GROUNDWORK_MCP_PORT", "8089")),
            api_workers=max(1, int(env.get("GROUNDWORK_API_WORKERS", "1"))),
            malware_scan=_choice(env, "GROUNDWORK_MALWARE_SCAN", ("off", "clamd")),
            clamd_socket=Path(env["GROUNDWORK_CLAMD_SOCKET"])
            if env.get("GROUNDWORK_CLAMD_SOCKET")
            else None,
            clamd_database=Path(env.get("GROUNDWORK_CLAMD_DATABASE", "/var/lib/clamav")),
            engines_managed=env.get("GROUNDWORK_ENGINES_MANAGED", "") == "1",
            dagster_url=env.get("GROUNDWORK_DAGSTER_URL") or None,
            database_replica_url=env.get("GROUNDWORK_DATABASE_REPLICA_URL") or None,
            opensearch_replicas=int(env["GROUNDWORK_OPENSEARCH_REPLICAS"])
            if env.get("GROUNDWORK_OPENSEARCH_REPLICAS")
            else None,
            query_cache_entries=max(0, int(env.get("GROUNDWORK_QUERY_CACHE_ENTRIES", "4096"))),
            embedding_device=_choice(env, "GROUNDWORK_EMBEDDING_DEVICE", ("cpu", "cuda")),
            blob_backend=_choice(env, "GROUNDWORK_BLOB_BACKEND", ("filesystem", "s3")),
            s3_endpoint=env.get("GROUNDWORK_S3_ENDPOINT") or None,
            s3_bucket=env.get("GROUNDWORK_S3_BUCKET", "groundwork"),
            s3_region=env.get("GROUNDWORK_S3_REGION", "us-east-1"),
            s3_prefix=env.get("GROUNDWORK_S3_PREFIX", ""),
            s3_path_style=env.get("GROUNDWORK_S3_PATH_STYLE", "1") != "0",
            s3_access_key_id=env.get("GROUNDWORK_S3_ACCESS_KEY_ID") or None,
            s3_secret_access_key=env.get("GROUNDWORK_S3_SECRET_ACCESS_KEY") or None,
            s3_port=int(env.get("GROUNDWORK_S3_PORT", "8333")),
            blob_read_fallback=_choice(env, "GROUNDWORK_BLOB_READ_FALLBACK", ("", "filesystem")),
            reranker=_choice(env, "GROUNDWORK_RERANKER", ("identifier", "learned")),
            rerank_url=env.get("GROUNDWORK_RERANK_URL") or None,
            rerank_model=env.get("GROUNDWORK_RERANK_MODEL", ""),
            rerank_format=_choice(env, "GROUNDWORK_RERANK_FORMAT", ("cohere", "tei")),
            rerank_timeout=float(env.get("GROUNDWORK_RERANK_TIMEOUT", "2.0")),
            embeddings_url=env.get("GROUNDWORK_EMBEDDINGS_URL") or None,
            embeddings_model=env.get("GROUNDWORK_EMBEDDINGS_MODEL", ""),
            metrics_token=env.get("GROUNDWORK_METRICS_TOKEN") or None,
            postgres_listen=env.get("GROUNDWORK_POSTGRES_LISTEN") or None,
            database_password=env.get("GROUNDWORK_DATABASE_PASSWORD") or None,
            opensearch_listen=env.get("GROUNDWORK_OPENSEARCH_LISTEN") or None,
            opensearch_user=env.get("GROUNDWORK_OPENSEARCH_USER", "groundwork"),
            opensearch_password=env.get("GROUNDWORK_OPENSEARCH_PASSWORD") or None,
            opensearch_ca=Path(env["GROUNDWORK_OPENSEARCH_CA"])
            if env.get("GROUNDWORK_OPENSEARCH_CA")
            else None,
            inbox_watcher=env.get("GROUNDWORK_INBOX_WATCHER") == "1",
            otlp_endpoint=env.get("GROUNDWORK_OTLP_ENDPOINT") or None,
            trace_sample_ratio=_ratio(env, "GROUNDWORK_TRACE_SAMPLE_RATIO", 0.1),
            freshness_target_seconds=float(env.get("GROUNDWORK_FRESHNESS_TARGET_SECONDS") or "900"),
        )


def _choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    value = env.get(name, allowed[0])
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}")
    return value


def _ratio(env: Mapping[str, str], name: str, default: float) -> float:
    value = float(env.get(name) or default)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1")
    return value
