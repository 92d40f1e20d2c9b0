"""The KeywordIndex port on OpenSearch (BM25).

One index per tenant (`<prefix>-t-<tenant>`, created on first write from an
index template), so BM25's term statistics are each tenant's own: a tenant's
scores never depend on what another tenant stored. An index from before that
change (`<prefix>-chunks`, shared) is reindexed into per-tenant indices once,
by `ensure_schema`. Two analyses of the same text: `content`
(standard tokens, lowercased, ASCII-folded, Porter-stemmed) and `content.ident`,
which splits only on whitespace and punctuation that never occurs inside an
identifier, so ERR-4021 and Q3-2026 stay whole tokens and match exactly.
No stopword filter on either: stopwords come off queries, never the index.
A query's codes (IL-6, METTL3) get an exact clause on top (`_code_clause`).

Both analyzers cap a term at 1,000 characters (`cap_term_length`, at most
4,000 UTF-8 bytes), so Lucene's 32,766-byte term limit ("immense term") is
never reached whatever text arrives. Analyzers cannot change on an open index:
tenant indices created before the cap keep their analyzers (ensure_schema only
adds fields). Chunking's character bound keeps any new chunk's terms under the
limit, and a bulk the index still refuses is reported as DocumentRefused, which
the keyword stage records on the refusing version alone.

Each tenant index is one shard, plus one replica as soon as the cluster has
a second data node (auto-expanded 0-1; GROUNDWORK_OPENSEARCH_REPLICAS fixes a
count). A node holds at most cluster.max_shards_per_node shards; an index
refused for it raises CapacityExhausted naming the limit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, NotFoundError, TransportError

from groundwork.errors import CapacityExhausted, DocumentRefused, EngineUnavailable, StoreError
from groundwork.ports import AccessScope, IndexedChunk, ScoredChunk, SearchFilters, search_layer
from groundwork.retrieval.query import keyword_query
from groundwork.services.health import KeywordClusterState
from resources.opensearch.wire import FastJSONSerializer

#: `replicas` when none is configured: one replica as soon as the cluster has a
#: second data node (a lost node then loses no document and a search finds the
#: other copy), none on a single node, which could never place it and would
#: stay yellow. OpenSearch adjusts it as nodes come and go.
AUTO_REPLICAS = "0-1"

INDEX_SETTINGS: dict[str, Any] = {
    "number_of_shards": 1,
    "analysis": {
        "tokenizer": {
            "identifier_tokenizer": {
                "type": "pattern",
                "pattern": "[\\s,;:!?()\\[\\]{}\"'<>|*#=+~`^]+",
            }
        },
        "filter": {
            "trim_identifier_edges": {
                "type": "pattern_replace",
                "pattern": "^[\\-_./]+|[\\-_./]+$",
                "replacement": "",
            },
            "non_empty": {"type": "length", "min": 1},
            "cap_term_length": {"type": "truncate", "length": 1000},
        },
        "analyzer": {
            "groundwork_text": {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["cap_term_length", "lowercase", "asciifolding", "porter_stem"],
            },
            "groundwork_identifier": {
                "type": "custom",
                "tokenizer": "identifier_tokenizer",
                "filter": [
                    "cap_term_length",
                    "lowercase",
                    "asciifolding",
                    "trim_identifier_edges",
                    "non_empty",
                ],
            },
        },
    },
}

MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "tenant_id": {"type": "keyword"},
        "source_id": {"type": "keyword"},
        "version_id": {"type": "keyword"},
        "subjects": {"type": "keyword"},
        "media_type": {"type": "keyword"},
        "content_hash": {"type": "keyword"},
        "live": {"type": "boolean"},
        # "raw" | "summary"; documents written before the summary layer have none (raw)
        "layer": {"type": "keyword"},
        "tags": {"type": "keyword"},
        "source_date": {"type": "date"},
        "title": {"type": "text", "analyzer": "groundwork_text"},
        "content": {
            "type": "text",
            "analyzer": "groundwork_text",
            "fields": {"ident": {"type": "text", "analyzer": "groundwork_identifier"}},
        },
    },
}


@contextlib.contextmanager
def _translated(action: str) -> Iterator[None]:
    try:
        yield
    except (OSConnectionError, ConnectionTimeout) as exc:
        raise EngineUnavailable(f"OpenSearch unavailable while {action}: {exc}") from exc
    except TransportError as exc:
        raise StoreError(f"OpenSearch refused {action}: {exc}") from exc
    except helpers.BulkIndexError as exc:
        raise _bulk_refusal(action, exc) from exc


def _bulk_refusal(action: str, exc: helpers.BulkIndexError) -> StoreError:
    """A bulk whose every failed item was refused for its content (4xx other
    than 429: mapping, immense term) is the documents' problem; anything else
    (overload, shard failures) is the engine's. The message names the error
    types and ids, never the documents' text."""
    refused: list[str] = []
    reasons: list[str] = []
    content_only = True
    for item in exc.errors:
        result: dict[str, Any] = next(iter(item.values()), {}) if isinstance(item, dict) else {}
        status = int(result.get("status", 0) or 0)
        error = result.get("error") or {}
        if not (400 <= status < 500 and status != 429):
            content_only = False
        refused.append(str(result.get("_id", "")))
        if len(reasons) < 3:
            detail = error.get("reason", "") if isinstance(error, dict) else str(error)
            kind = error.get("type", "") if isinstance(error, dict) else ""
            reasons.append(f"{kind}: {str(detail)[:200]}")
    message = f"OpenSearch refused {len(exc.errors)} document(s) while {action}: {reasons}"
    if content_only and refused:
        return DocumentRefused(message, tuple(refused))
    return StoreError(message)


#: how OpenSearch words the refusal of an index over cluster.max_shards_per_node
SHARD_LIMIT = re.compile(r"currently has \[(\d+)\]/\[(\d+)\] maximum (?:normal )?shards open")


def _cluster_full(tenant_id: str, refusal: re.Match[str]) -> CapacityExhausted:
    open_shards, limit = int(refusal[1]), int(refusal[2])
    return CapacityExhausted(
        f"OpenSearch cannot take tenant {tenant_id}'s keyword index: the cluster holds "
        f"{open_shards} of its {limit} shards (cluster.max_shards_per_node times the data "
        "nodes; each tenant index is one shard, and one more per replica). Add a node, or "
        "give the nodes more heap and a higher limit (for the embedded node "
        "GROUNDWORK_OPENSEARCH_HEAP raises both)",
        limit,
    )


def replica_settings(replicas: int | None) -> dict[str, Any]:
    """`None`: auto-expanded 0-1 (see AUTO_REPLICAS); a number: exactly that many."""
    if replicas is None:
        return {"number_of_replicas": 0, "auto_expand_replicas": AUTO_REPLICAS}
    if replicas < 0:
        raise ValueError("replicas must be 0 or more")
    return {"number_of_replicas": replicas, "auto_expand_replicas": False}


#: a health probe answers within this or reports the cluster unavailable
HEALTH_TIMEOUT_SECONDS = 5
#: A search that has no answer within this is retried on the next node (the
#: silent one is left out for `dead_timeout`). A node that hangs (SIGSTOP, a long
#: GC pause) keeps its sockets open, so only a timeout notices it: with the
#: client's 30 s, bench/cluster_failover.py --hang (3 nodes, 8 clients, a 20 s
#: hang) had every client stuck on the hung node for the whole 20 s. A keyword
#: search here answers in milliseconds; the bound leaves room for a loaded machine.
SEARCH_TIMEOUT_SECONDS = 3
#: HTTP connections kept open per node: as many as searches a process runs at
#: once (the keyword legs' 16 threads). urllib3 keeps one by default, and
#: every search beyond the first in flight opened a TCP connection and closed
#: it on return: 1,150 in 20 s at 8 clients in bench/search_load.py.
CONNECTIONS_PER_NODE = 16


def client_for(url: str) -> OpenSearch:
    """`url` may name several nodes of one cluster, comma-separated.

    A request that cannot reach a node (refused, reset: a node killed), that
    times out, or that a node answers 502/503/504 is retried at once on the
    next node, up to once per node; the failing node is left out for
    `dead_timeout` seconds (doubling while it keeps failing) and then tried
    again, so a restarted node gets traffic back. Measured with
    bench/cluster_failover.py: SIGKILL of a data node under 8 searching clients
    costs 0 failed searches (2 nodes, the one not holding the cluster manager's
    vote; 3 nodes, any one)."""
    hosts = [u.strip() for u in url.split(",") if u.strip()]
    if not hosts:
        raise ValueError("no OpenSearch URL given")
    return OpenSearch(
        hosts=hosts,
        timeout=30,
        max_retries=max(2, len(hosts)),
        retry_on_timeout=True,
        retry_on_status=(502, 503, 504),
        dead_timeout=30,
        pool_maxsize=CONNECTIONS_PER_NODE,
        serializer=FastJSONSerializer(),
    )


#: weight of a query's code found as written, on top of its ordinary match.
#: Issue 20: "which paper mentions METTL3" ranked chunks saying "paper" and
#: "mentions" above the one naming METTL3, and "eat-2" (two common words to the
#: text analysis) fell to rank 10.
CODE_BOOST = 1.0


def _code_clause(code: str) -> dict[str, Any]:
    """A code as written: a whole token of the identifier analysis (ERR-4021,
    KK3410 in "KK3410,11"); that token with a suffix after a separator, the
    forms a code takes in text (Kir5 as Kir5.1, UL111 as UL111.5A, pat1 as the
    deletion pat1Δ); or, for a code of one run of letters and digits that the
    identifier analysis keeps glued to its neighbours (METTL3/14, SCNS-P&C45),
    the text analysis's token."""
    lowered = code.lower()
    return {
        "dis_max": {
            "queries": [
                {"match": {"content.ident": {"query": code}}},
                {
                    "regexp": {
                        "content.ident": {
                            # the code, then anything but a letter, digit, _ or -
                            # (ERR-4021 is not ERR-4021-B; the reranker agrees)
                            "value": re.sub(r"([^a-z0-9])", r"\\\1", lowered) + "[^a-z0-9_\\-].*",
                            "flags": "NONE",
                            "rewrite": "top_terms_blended_freqs_10",
                        }
                    }
                },
                # a code of one run of letters and digits is one token of the text
                # analysis too; a code with separators is not (eat-2 is "eat", "2",
                # words any text about eating has), so only its exact forms count
                *([{"match": {"content": {"query": code}}}] if code.isalnum() else []),
            ],
            "boost": CODE_BOOST,
        }
    }


def _changing(live: bool) -> dict[str, Any]:
    """Documents whose liveness is not `live` yet: only they are rewritten. Every
    rewrite leaves a deleted copy that counts in the tenant's ranking statistics
    (document frequencies) until a merge purges it, so a second model publishing
    the same versions, or a run finishing a crashed publication, rewrote the
    tenant's whole index and moved its scores (measured: 11,756 deleted beside
    15,206 live documents in a SciFact eval tenant)."""
    return {"bool": {"must_not": {"term": {"live": live}}}}


class OpenSearchKeywordIndex:
    def __init__(
        self, client: OpenSearch, index_prefix: str = "groundwork", replicas: int | None = None
    ) -> None:
        self.client = client
        self.prefix = index_prefix
        self.replicas = replicas
        self.pattern = f"{index_prefix}-t-*"
        self.legacy_index = f"{index_prefix}-chunks"
        self._created: set[str] = set()

    def index_for(self, tenant_id: str) -> str:
        return f"{self.prefix}-t-{tenant_id.lower()}"

    def _ensure_tenant_index(self, tenant_id: str) -> str:
        """Created explicitly (the node does not auto-create indices); the
        template supplies settings and mappings."""
        index = self.index_for(tenant_id)
        if index in self._created:
            return index
        with _translated("creating a tenant's keyword index"):
            if not self.client.indices.exists(index=index):
                try:
                    self.client.indices.create(index=index)
                except TransportError as exc:
                    if refusal := SHARD_LIMIT.search(str(exc)):
                        raise _cluster_full(tenant_id, refusal) from exc
                    if "resource_already_exists_exception" not in str(exc):
                        raise
                self.client.cluster.health(index=index, wait_for_status="yellow")
        self._created.add(index)
        return index

    def cluster_state(self) -> KeywordClusterState:
        """The cluster's health as the first node that answers reports it (for
        /v1/health): a node lost shows as fewer nodes and yellow, a primary
        shard without a copy as red."""
        with _translated("reading cluster health"):
            health = self.client.cluster.health(request_timeout=HEALTH_TIMEOUT_SECONDS)
        return KeywordClusterState(
            status=str(health.get("status", "unknown")),
            nodes=int(health.get("number_of_nodes", 0)),
            data_nodes=int(health.get("number_of_data_nodes", 0)),
            unassigned_shards=int(health.get("unassigned_shards", 0)),
        )

    def ensure_schema(self) -> None:
        """Every process that connects calls this. When the stored template
        already carries this schema's fingerprint, the tenant indexes have it
        too and nothing is sent; otherwise the template is replaced and its
        fields and replica count are applied to every tenant index."""
        template = {
            "settings": {**INDEX_SETTINGS, **replica_settings(self.replicas)},
            "mappings": MAPPINGS,
        }
        fingerprint = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        name = f"{self.prefix}-chunks"
        with _translated("creating the chunk index template"):
            if self._template_fingerprint(name) != fingerprint:
                # The fingerprint is stored last, once every index has the schema:
                # a failure on the way leaves it unset and the next connect redoes it.
                self._put_template(name, template, meta={})
                # By the pattern, never a list of names: a thousand tenants' names
                # overflow the request line (4 KiB). Fields added since those
                # indices were created (adding a field is allowed), and the
                # replica count the configuration asks for now.
                self.client.indices.put_mapping(
                    index=self.pattern,
                    body={"properties": MAPPINGS["properties"]},
                    allow_no_indices=True,
                )
                self.client.indices.put_settings(
                    index=self.pattern,
                    body={"index": replica_settings(self.replicas)},
                    allow_no_indices=True,
                )
                self._put_template(name, template, meta={"schema": fingerprint})
            if self.client.indices.exists(index=self.legacy_index):
                self._split_legacy_index()

    def _put_template(self, name: str, template: dict[str, Any], meta: dict[str, str]) -> None:
        self.client.indices.put_index_template(
            name=name,
            body={
                "index_patterns": [self.pattern],
                "priority": 100,
                "template": template,
                "_meta": meta,
            },
        )

    def _template_fingerprint(self, name: str) -> str | None:
        try:
            found = self.client.indices.get_index_template(name=name)
        except NotFoundError:
            return None
        for entry in found.get("index_templates", []):
            meta = entry.get("index_template", {}).get("_meta") or {}
            return str(meta.get("schema")) if meta.get("schema") else None
        return None

    def _split_legacy_index(self) -> None:
        """Reindex the shared index of earlier versions into per-tenant indices
        (one reindex per tenant, into an index created first), then drop it."""
        self.client.indices.refresh(index=self.legacy_index)
        after: dict[str, Any] | None = None
        while True:
            composite: dict[str, Any] = {
                "size": 500,
                "sources": [{"tenant": {"terms": {"field": "tenant_id"}}}],
            }
            if after is not None:
                composite["after"] = after
            response = self.client.search(
                index=self.legacy_index,
                body={"size": 0, "aggs": {"tenants": {"composite": composite}}},
            )
            buckets = response["aggregations"]["tenants"]["buckets"]
            for bucket in buckets:
                tenant_id = bucket["key"]["tenant"]
                self.client.reindex(
                    body={
                        "source": {
                            "index": self.legacy_index,
                            "query": {"term": {"tenant_id": tenant_id}},
                        },
                        "dest": {"index": self._ensure_tenant_index(tenant_id)},
                    },
                    refresh=True,
                    wait_for_completion=True,
                )
            after = response["aggregations"]["tenants"].get("after_key")
            if not buckets or after is None:
                break
        self.client.indices.delete(index=self.legacy_index)

    def drop(self) -> None:
        with _translated("dropping the chunk indices"):
            # one request by the pattern: a thousand deletions one by one each
            # publish a cluster state
            self.client.indices.delete(index=self.pattern, ignore_unavailable=True)
            self._created.clear()
            self.client.indices.delete(index=self.legacy_index, ignore_unavailable=True)
            with contextlib.suppress(NotFoundError):
                self.client.indices.delete_index_template(name=f"{self.prefix}-chunks")

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int:
        if not chunks:
            return 0
        for tenant_id in {c.tenant_id for c in chunks}:
            self._ensure_tenant_index(tenant_id)
        # A rewrite of the same version keeps its liveness; a new version starts hidden.
        live_now = self._live_versions([c.chunk_id for c in chunks], chunks[0].tenant_id)
        actions = [
            {
                "_op_type": "index",
                "_index": self.index_for(c.tenant_id),
                "_id": c.chunk_id,
                "_routing": c.tenant_id,
                "_source": {
                    "tenant_id": c.tenant_id,
                    "source_id": c.source_id,
                    "version_id": c.version_id,
                    "subjects": list(c.subjects),
                    "media_type": c.media_type,
                    "content_hash": c.content_hash,
                    "live": live_now.get(c.chunk_id) == c.version_id,
                    "title": c.title,
                    "content": c.content,
                    "tags": list(c.tags),
                    "source_date": c.source_date.isoformat() if c.source_date else None,
                    "layer": c.layer,
                },
            }
            for c in chunks
        ]
        with _translated("writing keyword documents"):
            # No refresh per bulk: documents are written hidden, and every
            # operation that searches for them (liveness, deletion) refreshes first.
            helpers.bulk(self.client, actions, refresh=False, chunk_size=500)
        return len(chunks)

    def _live_versions(self, chunk_ids: list[str], tenant_id: str) -> dict[str, str]:
        with _translated("reading liveness"):
            try:
                response = self.client.mget(
                    index=self.index_for(tenant_id),
                    body={"ids": chunk_ids},
                    routing=tenant_id,
                    _source_includes=["version_id", "live"],
                )
            except NotFoundError:  # the tenant's first write creates its index
                return {}
        out: dict[str, str] = {}
        for doc in response.get("docs", []):
            if doc.get("found") and doc["_source"].get("live"):
                out[doc["_id"]] = doc["_source"]["version_id"]
        return out

    def _update_where(
        self, tenant_id: str, filters: list[dict[str, Any]], script: dict[str, Any]
    ) -> int:
        body = {
            "query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}, *filters]}},
            "script": script,
        }
        index = self.index_for(tenant_id)
        with _translated("updating keyword documents"):
            try:
                self.client.indices.refresh(index=index)
                response = self.client.update_by_query(
                    index=index, body=body, routing=tenant_id, refresh=True, conflicts="proceed"
                )
            except NotFoundError:
                return 0
        return int(response.get("updated", 0))

    def set_live(self, tenant_id: str, source_id: str, version_id: str | None, live: bool) -> int:
        filters: list[dict[str, Any]] = [{"term": {"source_id": source_id}}, _changing(live)]
        if version_id is not None:
            filters.append({"term": {"version_id": version_id}})
        script = {
            "source": "ctx._source.live = params.live",
            "lang": "painless",
            "params": {"live": live},
        }
        return self._update_where(tenant_id, filters, script)

    def set_versions_live(self, tenant_id: str, version_ids: Sequence[str], live: bool) -> int:
        if not version_ids:
            return 0
        script = {
            "source": "ctx._source.live = params.live",
            "lang": "painless",
            "params": {"live": live},
        }
        total = 0
        for start in range(0, len(version_ids), 1000):
            part = list(version_ids[start : start + 1000])
            total += self._update_where(
                tenant_id, [{"terms": {"version_id": part}}, _changing(live)], script
            )
        return total

    def set_subjects(self, tenant_id: str, source_id: str, subjects: Sequence[str]) -> int:
        script = {
            "source": "ctx._source.subjects = params.subjects",
            "lang": "painless",
            "params": {"subjects": list(subjects)},
        }
        return self._update_where(tenant_id, [{"term": {"source_id": source_id}}], script)

    def set_tags(self, tenant_id: str, source_id: str, tags: Sequence[str]) -> int:
        script = {
            "source": "ctx._source.tags = params.tags",
            "lang": "painless",
            "params": {"tags": list(tags)},
        }
        return self._update_where(tenant_id, [{"term": {"source_id": source_id}}], script)

    def search(
        self,
        scope: AccessScope,
        query: str,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]:
        if not scope.subjects or limit <= 0 or not query.strip():
            return []
        parsed = keyword_query(query)
        ranked = parsed.words or " ".join(parsed.phrases)
        clauses: list[dict[str, Any]] = [
            {"term": {"tenant_id": scope.tenant_id}},
            {"term": {"live": True}},
            {"terms": {"subjects": list(scope.subjects)}},
        ]
        excluded: list[dict[str, Any]] = []
        if search_layer(filters) == "raw":
            # documents indexed before the summary layer carry no layer: raw
            excluded.append({"term": {"layer": "summary"}})
        else:
            clauses.append({"term": {"layer": search_layer(filters)}})
        if filters and filters.source_ids is not None:
            clauses.append({"terms": {"source_id": list(filters.source_ids)}})
        if filters and filters.media_types is not None:
            clauses.append({"terms": {"media_type": list(filters.media_types)}})
        if filters and filters.tags is not None:
            clauses.append({"terms": {"tags": list(filters.tags)}})
        if filters and (filters.date_from is not None or filters.date_to is not None):
            bounds: dict[str, str] = {}
            if filters.date_from is not None:
                bounds["gte"] = filters.date_from.isoformat()
            if filters.date_to is not None:
                bounds["lt"] = filters.date_to.isoformat()
            clauses.append({"range": {"source_date": bounds}})
        body = {
            "size": limit,
            "_source": ["source_id", "version_id"],
            "query": {
                "bool": {
                    "filter": clauses,
                    "must_not": excluded,
                    # Measured on SciFact train (nDCG@10): content alone 0.695; with
                    # content.ident at boost 2 and title 0.5, 0.667. The identifier
                    # field stays at a low boost so ERR-4021 still wins exact matches.
                    # quoted phrases must appear as written; the other words rank
                    "must": [
                        {"match_phrase": {"content": {"query": phrase}}}
                        for phrase in parsed.phrases
                    ],
                    "should": [
                        {"match": {"content": {"query": ranked}}},
                        {"match": {"content.ident": {"query": ranked, "boost": 0.3}}},
                        *(_code_clause(code) for code in parsed.codes),
                    ],
                    "minimum_should_match": 0 if parsed.phrases else 1,
                }
            },
            # Relevance order alone, no field sort: with no total to count, the node
            # skips documents that cannot reach the top (block-max WAND), which a
            # sort on (_score, _id) forbids. Measured on the 1M-chunk bench node
            # (300 SciFact queries, 50 hits): took 40.2 -> 32.2 ms mean for a 140k-
            # chunk tenant, 7.8 -> 6.9 ms for 28k. Equal scores then come in index
            # order, which two copies of a shard may not share: sorted by id below.
            # nobody reads the total, so the node need not count every match (up
            # to 10,000): 3.2 -> 3.1 ms of node CPU per search in bench/search_load.py
            "track_total_hits": False,
        }
        with _translated("searching keywords"):
            try:
                response = self.client.search(
                    index=self.index_for(scope.tenant_id),
                    body=body,
                    routing=scope.tenant_id,
                    # no `preference`: pinning a tenant to one shard copy kept ties in
                    # one order but sent every search to a hung node's copy until the
                    # cluster dropped it (the hung-node test failed); adaptive replica
                    # selection steers away from it
                    request_timeout=SEARCH_TIMEOUT_SECONDS,
                )
            except NotFoundError:
                return []
        hits = [
            ScoredChunk(
                h["_id"], h["_source"]["source_id"], h["_source"]["version_id"], float(h["_score"])
            )
            for h in response["hits"]["hits"]
        ]
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits

    def _delete_where(
        self, tenant_id: str, filters: list[dict[str, Any]], must_not: list[dict[str, Any]]
    ) -> int:
        body = {
            "query": {
                "bool": {
                    "filter": [{"term": {"tenant_id": tenant_id}}, *filters],
                    "must_not": must_not,
                }
            }
        }
        index = self.index_for(tenant_id)
        with _translated("deleting keyword documents"):
            try:
                self.client.indices.refresh(index=index)
                response = self.client.delete_by_query(
                    index=index, body=body, routing=tenant_id, refresh=True, conflicts="proceed"
                )
            except NotFoundError:
                return 0
        return int(response.get("deleted", 0))

    def delete_source(
        self, tenant_id: str, source_id: str, keep_version_id: str | None = None
    ) -> int:
        must_not = (
            [{"term": {"version_id": keep_version_id}}] if keep_version_id is not None else []
        )
        return self._delete_where(tenant_id, [{"term": {"source_id": source_id}}], must_not)

    def delete_versions(self, tenant_id: str, version_ids: Sequence[str]) -> int:
        total = 0
        ordered = sorted(version_ids)
        for start in range(0, len(ordered), 1000):
            part = ordered[start : start + 1000]
            total += self._delete_where(tenant_id, [{"terms": {"version_id": part}}], [])
        return total

    def delete_tenant(self, tenant_id: str) -> int:
        """The tenant's whole index goes (its statistics with it)."""
        index = self.index_for(tenant_id)
        with _translated("deleting a tenant's keyword index"):
            try:
                count = int(self.client.count(index=index)["count"])
            except NotFoundError:
                return 0
            self.client.indices.delete(index=index, ignore_unavailable=True)
        self._created.discard(index)
        return count

    def chunk_ids(self, tenant_id: str, live_only: bool = True) -> set[str]:
        clauses: list[dict[str, Any]] = [{"term": {"tenant_id": tenant_id}}]
        if live_only:
            clauses.append({"term": {"live": True}})
        index = self.index_for(tenant_id)
        with _translated("listing keyword documents"):
            if not self.client.indices.exists(index=index):
                return set()
            self.client.indices.refresh(index=index)
            return {
                hit["_id"]
                for hit in helpers.scan(
                    self.client,
                    index=index,
                    query={"query": {"bool": {"filter": clauses}}, "_source": False},
                    routing=tenant_id,
                    size=1000,
                )
            }
