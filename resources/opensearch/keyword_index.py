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
from collections.abc import Sequence
from typing import Any

from opensearchpy import OpenSearch, helpers
from opensearchpy.exceptions import NotFoundError, TransportError

from groundwork.ports import AccessScope, IndexedChunk, ScoredChunk, SearchFilters
from groundwork.services.health import KeywordClusterState
from resources.opensearch.client import (
    CONNECTIONS_PER_NODE,
    HEALTH_TIMEOUT_SECONDS,
    SEARCH_TIMEOUT_SECONDS,
    SHARD_LIMIT,
    client_for,
    cluster_full,
    translated,
)
from resources.opensearch.query_body import CODE_BOOST, HIT_FIELDS, changing, search_body
from resources.opensearch.schema import AUTO_REPLICAS, INDEX_SETTINGS, MAPPINGS, replica_settings

#: the largest tenant index `compact` merges whole (about 50,000 chunks)
COMPACT_BELOW_BYTES = 64 * 1024 * 1024


class OpenSearchKeywordIndex:
    def __init__(
        self,
        client: OpenSearch,
        index_prefix: str = "groundwork",
        replicas: int | None = None,
        compact_below_bytes: int = COMPACT_BELOW_BYTES,
    ) -> None:
        self.client = client
        self.compact_below_bytes = compact_below_bytes
        self.prefix = index_prefix
        self.replicas = replicas
        self.pattern = f"{index_prefix}-t-*"
        self.legacy_index = f"{index_prefix}-chunks"
        self._created: set[str] = set()
        #: indexes whose chunk id backfill this process has started
        self._backfilled: set[str] = set()

    def index_for(self, tenant_id: str) -> str:
        return f"{self.prefix}-t-{tenant_id.lower()}"

    def _ensure_tenant_index(self, tenant_id: str) -> str:
        """Created explicitly (the node does not auto-create indices); the
        template supplies settings and mappings."""
        index = self.index_for(tenant_id)
        if index in self._created:
            return index
        with translated("creating a tenant's keyword index"):
            if not self.client.indices.exists(index=index):
                try:
                    self.client.indices.create(index=index)
                except TransportError as exc:
                    if refusal := SHARD_LIMIT.search(str(exc)):
                        raise cluster_full(tenant_id, refusal) from exc
                    if "resource_already_exists_exception" not in str(exc):
                        raise
                self.client.cluster.health(index=index, wait_for_status="yellow")
        self._created.add(index)
        return index

    def cluster_state(self) -> KeywordClusterState:
        """The cluster's health as the first node that answers reports it (for
        /v1/health): a node lost shows as fewer nodes and yellow, a primary
        shard without a copy as red."""
        with translated("reading cluster health"):
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
        with translated("creating the chunk index template"):
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
                # documents written before a field joined the mapping lack it:
                # `chunk_id` is read by every search (the others are optional)
                self._backfill_chunk_ids([self.pattern])
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
        with translated("dropping the chunk indices"):
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
                    "chunk_id": c.chunk_id,
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
                    "document_type": c.document_type,
                },
            }
            for c in chunks
        ]
        with translated("writing keyword documents"):
            # No refresh per bulk: documents are written hidden, and every
            # operation that searches for them (liveness, deletion) refreshes first.
            helpers.bulk(self.client, actions, refresh=False, chunk_size=500)
        return len(chunks)

    def _live_versions(self, chunk_ids: list[str], tenant_id: str) -> dict[str, str]:
        with translated("reading liveness"):
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
        with translated("updating keyword documents"):
            try:
                self.client.indices.refresh(index=index)
                response = self.client.update_by_query(
                    index=index, body=body, routing=tenant_id, refresh=True, conflicts="proceed"
                )
            except NotFoundError:
                return 0
        return int(response.get("updated", 0))

    def set_live(self, tenant_id: str, source_id: str, version_id: str | None, live: bool) -> int:
        filters: list[dict[str, Any]] = [{"term": {"source_id": source_id}}, changing(live)]
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
                tenant_id, [{"terms": {"version_id": part}}, changing(live)], script
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
        body = search_body(scope, query, limit, filters)
        with translated("searching keywords"):
            try:
                # each corpus read is its owner's index (the system corpus's
                # is scored by its own statistics, as every tenant's is); one
                # not created yet holds nothing and is skipped
                owners = [owner for owner, _ in scope.readable_owners()]
                response = self.client.search(
                    index=",".join(self.index_for(owner) for owner in owners),
                    body=body,
                    routing=",".join(owners),
                    ignore_unavailable=len(owners) > 1,
                    # the coordinating node's own copy where it holds one: a node
                    # that hangs (sockets open) then costs only the searches the
                    # client sent to it, which the client retries elsewhere and
                    # leaves it out; without it the healthy coordinator still
                    # routed shard requests to the hung copy for seconds (adaptive
                    # replica selection learns only from answers), and a search
                    # could spend all its attempts there. Not a pinned copy: that
                    # sent every search to a hung node's copy until the cluster
                    # dropped it.
                    preference="_local",
                    request_timeout=SEARCH_TIMEOUT_SECONDS,
                )
            except NotFoundError:
                return []
        found = response["hits"]["hits"]
        if any("chunk_id" not in h.get("fields", {}) for h in found):
            # a document written before `chunk_id` joined the mapping: this
            # search reads stored fields as before, and the index is backfilled
            found = self._search_stored(owners, body)
        hits = [
            ScoredChunk(
                str(h["fields"]["chunk_id"][0]),
                str(h["fields"]["source_id"][0]),
                str(h["fields"]["version_id"][0]),
                float(h["_score"]),
            )
            for h in found
        ]
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits

    def compact(self, tenant_id: str) -> bool:
        """A tenant index of more than one segment and at most
        `compact_below_bytes` is merged into one by the node, not waited for
        (its force-merge pool runs one at a time). Every search pays for each
        segment: on the SciFact tenant just published (15,206 documents, 14
        segments, 540 deleted copies) 6.1 ms of node CPU per search, 4.6 ms
        once merged, and the merge took 1.3 s. A larger index is left to the
        merge policy: merging it whole after each publication of a few files
        would cost more than its searches gain."""
        index = self.index_for(tenant_id)
        with translated("compacting a keyword index"):
            try:
                stats = self.client.indices.stats(index=index, metric="segments,store")
            except NotFoundError:
                return False
            primaries = stats["indices"][index]["primaries"]
            if (
                primaries["segments"]["count"] <= 1
                or primaries["store"]["size_in_bytes"] > self.compact_below_bytes
            ):
                return False
            self.client.indices.forcemerge(
                index=index, params={"max_num_segments": 1, "wait_for_completion": "false"}
            )
        return True

    def _search_stored(self, owners: list[str], body: dict[str, Any]) -> list[dict[str, Any]]:
        """The search again, its hits' ids and versions read from stored fields
        and given the doc values' shape; then the owners' indexes are backfilled
        (once per process; a rolling upgrade's old writer may add more)."""
        stored = {
            **{k: v for k, v in body.items() if k not in ("stored_fields", "docvalue_fields")},
            "_source": list(HIT_FIELDS[1:]),
        }
        indexes = [self.index_for(owner) for owner in owners]
        with translated("searching keywords"):
            response = self.client.search(
                index=",".join(indexes),
                body=stored,
                routing=",".join(owners),
                ignore_unavailable=len(owners) > 1,
                preference="_local",
                request_timeout=SEARCH_TIMEOUT_SECONDS,
            )
        self._backfill_chunk_ids([i for i in indexes if i not in self._backfilled])
        return [
            {
                "_score": h["_score"],
                "fields": {
                    "chunk_id": [h["_id"]],
                    **{name: [h["_source"][name]] for name in HIT_FIELDS[1:]},
                },
            }
            for h in response["hits"]["hits"]
        ]

    def _backfill_chunk_ids(self, indexes: Sequence[str]) -> None:
        """Documents without `chunk_id` get it from their `_id`: one update by
        query per call, run by the cluster as a task (not waited for: a large
        tenant's takes minutes) and harmless twice (it selects only documents
        still without the field; a conflict with a concurrent write is skipped,
        and that write carries the field)."""
        if not indexes:
            return
        self._backfilled.update(indexes)
        with translated("backfilling keyword documents' chunk ids"):
            self.client.update_by_query(
                index=",".join(indexes),
                body={
                    "query": {"bool": {"must_not": {"exists": {"field": "chunk_id"}}}},
                    "script": {"source": "ctx._source.chunk_id = ctx._id", "lang": "painless"},
                },
                conflicts="proceed",
                wait_for_completion=False,
                allow_no_indices=True,
                ignore_unavailable=True,
            )

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
        with translated("deleting keyword documents"):
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
        with translated("deleting a tenant's keyword index"):
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
        with translated("listing keyword documents"):
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


__all__ = [
    "AUTO_REPLICAS",
    "CODE_BOOST",
    "CONNECTIONS_PER_NODE",
    "HEALTH_TIMEOUT_SECONDS",
    "INDEX_SETTINGS",
    "MAPPINGS",
    "OpenSearchKeywordIndex",
    "SEARCH_TIMEOUT_SECONDS",
    "client_for",
    "replica_settings",
]
