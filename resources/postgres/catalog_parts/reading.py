"""Reading back for search results, sections, citations and drill-down."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import orjson
from psycopg import sql
from psycopg.rows import dict_row

from groundwork.citations import Citation
from groundwork.documents import ExtractedDocument, ExtractionFailure, FailureReason, Location
from groundwork.ports import AccessScope
from groundwork.retrieval.outcome import ChunkView
from groundwork.stages.publication import RETIRE_GRACE_SECONDS
from resources.postgres.catalog_parts.common import StoreBase
from resources.postgres.chunk_rows import owner_condition
from resources.postgres.database import translated_errors


def _json_text(value: Any) -> str:
    """orjson's text, or json's for what orjson refuses (a lone surrogate, an
    integer beyond 64 bits), so the server sees the refusal it always saw."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


_PLAIN_ID = re.compile(r"^[A-Za-z0-9_:.-]+$")


def id_array(ids: Sequence[str]) -> str | list[str]:
    """Ids for `string_to_array(%s, ',')`: psycopg dumps a Python list element by
    element in Python (155 us for a search's 150 ids, against 31 us for one
    joined string, measured); ids that need quoting go as a list."""
    if all(_PLAIN_ID.match(i) for i in ids):
        return ",".join(ids)
    return list(ids)


@lru_cache(maxsize=8192)
def location_from_json(text: str) -> Location:
    """A chunk's stored location, parsed once per process: Locations are
    immutable, and a search re-reads its ~90 candidates' locations, most of
    them read before (parsing all of them was ~8% of the API's CPU per search,
    measured with py-spy under bench/search_load.py)."""
    return Location.from_dict(json.loads(text))


@lru_cache(maxsize=8192)
def source_location_from_json(text: str) -> tuple[tuple[str, str], ...]:
    """Where a connector found a version (migration 0032), parsed once per
    process like a chunk's location: a search's candidates share versions."""
    return tuple(sorted((str(k), str(v)) for k, v in json.loads(text).items()))


#: The re-check behind every search: each candidate id looked up by key and
#: joined to the publication pointer of `model_key` (the tenant's serving model
#: when NULL) under the caller's subjects. The lookup is a LATERAL subquery
#: behind OFFSET 0 (a planner fence), so every plan PostgreSQL may choose, the
#: generic plan of a prepared statement included, starts from the ids: with
#: `chunk_id = ANY(ids)` a generic plan started from the tenant's sources and
#: read all their chunks (17 ms instead of 2 for a 6,400-chunk tenant). So it
#: can be prepared: planning it was about 1 ms of a search's 2 ms of server
#: time (tests/e2e/test_recheck_plan.py).
#: The owners: the caller's tenant under its subjects, and the system corpus
#: under the subjects it is read with (NULL and no subjects when the scope does
#: not read it: one statement either way, so it stays prepared). A system
#: corpus row is served at the caller's model, as the legs searched it.
#: Parameters: ids, model key, tenant, grace seconds, tenant, subjects,
#: system tenant, system subjects.
_RECHECK = (
    "SELECT r.* FROM unnest({ids}) AS ids(chunk_id) CROSS JOIN LATERAL ("
    "SELECT c.chunk_id, c.source_id, c.version_id, coalesce(v.title, s.filename), s.filename, "
    "v.media_type, c.heading_path, c.body, c.location::text, c.content_hash, c.low_confidence, "
    "c.version_id = p.version_id AS current, c.layer, s.doc_type, s.origin, "
    "v.source_location::text, c.tenant_id, c.parent_id "
    "FROM chunks c "
    "JOIN sources s ON s.source_id = c.source_id "
    "JOIN source_versions v ON v.version_id = c.version_id "
    "JOIN published_versions p ON p.source_id = c.source_id "
    "AND p.model_key = coalesce(%s, (SELECT t.active_model FROM tenants t WHERE t.tenant_id = %s)) "
    "AND (p.version_id = c.version_id OR (p.previous_version_id = c.version_id "
    "     AND p.published_at > now() - make_interval(secs => %s))) "
    "WHERE c.chunk_id = ids.chunk_id AND s.tenant_id = c.tenant_id AND s.state = 'active' "
    "AND ((c.tenant_id = %s AND groundwork_readable(s.subjects, %s)) "
    "  OR (c.tenant_id = %s AND groundwork_readable(s.subjects, %s))) OFFSET 0) AS r"
)
RECHECK_SQL = _RECHECK.format(ids="string_to_array(%s, ',')")
#: the same, for ids that need quoting (sent as an array)
RECHECK_LIST_SQL = _RECHECK.format(ids="%s::text[]")


#: A source row `s` the scope reads: its tenant's under the key's subjects, or
#: the system corpus's under the system subjects (see `_owner_params`).
_SOURCE_OWNERS = (
    "((s.tenant_id = %s AND groundwork_readable(s.subjects, %s)) "
    "OR (s.tenant_id = %s AND groundwork_readable(s.subjects, %s)))"
)


def citation_ids(count: int) -> list[str]:
    """`count` new citation ids: `cit_`, the time in milliseconds (12 hex
    digits) and 80 random bits (20). Every search adds its citations to one
    ever-growing primary key; random ids put each insert on a random leaf, and
    the first change of a page after a checkpoint writes the whole page to the
    WAL (5.8 KB of full-page images per search through `groundwork up`, 40% of
    a search's WAL, 1.2M citations). Ids that begin with their time append at
    the right edge. An id says when it was issued, which `retrieved_at` says
    anyway; it grants nothing (a citation is read under its tenant's wall and
    the reader's subjects)."""
    millis = f"{time.time_ns() // 1_000_000:012x}"
    return [f"cit_{millis}{secrets.token_hex(10)}" for _ in range(count)]


def _owner_params(scope: AccessScope) -> tuple[object, ...]:
    """The two owners of a scope's reads, as the statements here take them:
    (tenant, subjects, system owner, system subjects); the second pair is NULL
    and no subjects when the scope does not read the system corpus, so each
    statement is one text either way (and can stay prepared)."""
    owners = scope.readable_owners()
    system: tuple[str | None, list[str]] = (
        (owners[1][0], list(owners[1][1])) if len(owners) > 1 else (None, [])
    )
    return (scope.tenant_id, list(scope.subjects), *system)


#: Upserted in sorted id order: concurrent searches with one key hand out
#: overlapping ids in different rank orders, and two upserts that lock the same
#: rows in different orders deadlock. One order for every caller cannot.
#: An id issued to the key in the last REISSUE_MINUTES is not rewritten:
#: rewriting it on every hit made a row version and two index entries per
#: popular chunk per search, and `was_issued`'s 24-hour window loses at most
#: those minutes. The check is the conflict's own (the primary key finds the
#: row; a conflicting row left as it is is only locked), never a lookup the
#: planner chooses: as NOT EXISTS it became an anti join over every id the key
#: was ever issued (1,421 rows, 1 ms, for a key a minute old), and as a lateral
#: lookup, on a table without statistics, a scan of them per id.
_UPSERT_ISSUED_FROM = (
    "INSERT INTO issued_chunks (key_id, chunk_id) "
    "SELECT {key}, u.chunk_id FROM {ids} AS u(chunk_id) ORDER BY u.chunk_id "
    "ON CONFLICT (key_id, chunk_id) DO UPDATE SET issued_at = now() "
    "WHERE issued_chunks.issued_at <= now() - interval '{minutes} minutes'"
)
REISSUE_MINUTES = 10
_UPSERT_ISSUED = _UPSERT_ISSUED_FROM.format(
    key="%(key)s", ids="unnest(%(ids)s::text[])", minutes=REISSUE_MINUTES
)
#: how far back the ids handed to a key count (`was_issued`, `issued_recently`):
#: an id older than this is refused by drill-down, so its row is only kept
#: until its key's next sweep
ISSUED_WINDOW_HOURS = 24
#: a key's ids past the window, deleted before its next issue (a statement of
#: its own: deleting them in the upsert's statement could touch a row that the
#: same statement re-issues, which PostgreSQL does not order)
_SWEEP_EXPIRED_ISSUED = "DELETE FROM issued_chunks WHERE key_id = %s AND issued_at <= now() - make_interval(hours => %s)"


class IssuedSweeps:
    """When this process last swept each key's expired issued ids: at most once
    per `every_seconds` per key, and only when the key is handed ids (an idle
    key costs nothing, a busy one one indexed delete an hour). Bounded: the
    least recently swept keys are forgotten first (a forgotten key is swept at
    its next issue, which is harmless)."""

    def __init__(
        self,
        every_seconds: float = 3600.0,
        remembered: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_seconds = every_seconds
        self.remembered = remembered
        self.clock = clock
        self._lock = threading.Lock()
        self._last: OrderedDict[str, float] = OrderedDict()

    def due(self, key_id: str) -> bool:
        """True (and the key counted as swept now) when its sweep is due."""
        now = self.clock()
        with self._lock:
            last = self._last.get(key_id)
            if last is not None and now - last < self.every_seconds:
                return False
            self._last[key_id] = now
            self._last.move_to_end(key_id)
            while len(self._last) > self.remembered:
                self._last.popitem(last=False)
            return True

    def forget(self) -> None:
        with self._lock:
            self._last.clear()


#: the serving process's sweeps (one per process: every catalog view shares it)
ISSUED_SWEEPS = IssuedSweeps()


def _sweep_expired_issued(conn: Any, key_id: str) -> None:
    if key_id and ISSUED_SWEEPS.due(key_id):
        conn.execute(_SWEEP_EXPIRED_ISSUED, (key_id, ISSUED_WINDOW_HOURS))


#: the same, reading the ids from record_citations' JSON document
_ISSUED_FROM_DOCUMENT = _UPSERT_ISSUED_FROM.format(
    key="%(key)s",
    ids="jsonb_array_elements_text(%(doc)s::jsonb -> 'issued')",
    minutes=REISSUE_MINUTES,
)


#: The citations' rows with their sources' scope (the sources the scope reads:
#: its tenant's, the system corpus's when it reads it), each source looked up by
#: key behind OFFSET 0 (a planner fence): joined plainly, every plan hashed the
#: tenant's whole `sources` table per search (a seq scan of 6,231 rows, 3 ms of
#: a SciFact tenant's search, growing with the tenant), the generic plan of the
#: prepared statement included, because the planner guesses 100 rows for the
#: JSON document (tests/e2e/test_recheck_plan.py).
CITED_ROWS_SQL = (
    "SELECT u.*, s.subjects, encode(sha256(convert_to(%(tenant)s || "
    "(u.snapshot - 'retrieved_at')::text, 'UTF8')), 'hex') AS snapshot_id "
    "FROM jsonb_to_recordset(%(doc)s::jsonb -> 'rows') AS u(citation_id text, "
    "chunk_id text, source_id text, version_id text, content_hash text, "
    "snapshot jsonb, retrieved_at timestamptz) "
    "CROSS JOIN LATERAL (SELECT s.subjects FROM sources s WHERE s.source_id = u.source_id "
    "AND s.tenant_id = ANY(%(owners)s) OFFSET 0) AS s"
)


def citations_document(
    issued: Sequence[str], ids: Sequence[str], citations: Sequence[Citation]
) -> str:
    """What record_citations sends: the issued ids and each citation under its
    id, the rows in id order like every multi-row write here (one lock order
    for all writers), as one JSON document, encoded once in C. As eight arrays
    psycopg dumped them element by element in Python, 11% of the API's own CPU
    under bench/search_load.py at 8 clients (py-spy); json's encoder was then
    2.7% of it, orjson's a fifth of that. The snapshot's id is hashed from the
    jsonb the server parsed, so it does not depend on which encoder wrote it."""
    rows = sorted(zip(ids, citations, strict=True), key=lambda pair: pair[0])
    return _json_text(
        {
            "issued": issued,
            "rows": [
                {
                    "citation_id": citation_id,
                    "chunk_id": c.chunk_id,
                    "source_id": c.source_id,
                    "version_id": c.source_version_id,
                    "content_hash": c.content_hash,
                    "snapshot": c.to_dict(),
                    "retrieved_at": c.retrieved_at.isoformat(),
                }
                for citation_id, c in rows
            ],
        }
    )


def record_params(scope: AccessScope, key_id: str, document: str) -> dict[str, object]:
    """RECORD_CITATIONS_SQL's parameters (every part reads from these)."""
    return {
        "key": key_id,
        "doc": document,
        "tenant": scope.tenant_id,
        "owners": [owner for owner, _ in scope.readable_owners()],
    }


#: record_citations' statement by part, each a CTE of one statement (named so
#: bench/citation_write.py can measure what each costs the server): the ids
#: handed to the key; the rows with their sources' scope and snapshot ids;
#: one snapshot row per distinct snapshot, in id order (one lock order for
#: every writer); the citations.
RECORD_ISSUED = f"issued AS ({_ISSUED_FROM_DOCUMENT})"
RECORD_CITED = f"c AS ({CITED_ROWS_SQL})"
RECORD_SNAPSHOTS = (
    "stored AS (INSERT INTO citation_snapshots (snapshot_id, tenant_id, source_id, snapshot) "
    "SELECT DISTINCT ON (c.snapshot_id) c.snapshot_id, %(tenant)s, c.source_id, "
    "c.snapshot - 'retrieved_at' FROM c ORDER BY c.snapshot_id "
    "ON CONFLICT (snapshot_id) DO NOTHING)"
)
RECORD_ROWS = (
    "INSERT INTO citations (citation_id, tenant_id, key_id, chunk_id, source_id, version_id, "
    "content_hash, subjects, snapshot_id, retrieved_at) "
    "SELECT c.citation_id, %(tenant)s, %(key)s, c.chunk_id, c.source_id, c.version_id, "
    "c.content_hash, c.subjects, c.snapshot_id, c.retrieved_at FROM c "
    "ORDER BY c.citation_id"
)
RECORD_CITATIONS_SQL = f"WITH {RECORD_ISSUED}, {RECORD_CITED}, {RECORD_SNAPSHOTS} {RECORD_ROWS}"


class Reading(StoreBase):
    # reading (ChunkReader) -------------------------------------------------------------
    def has_accessible_sources(self, scope: AccessScope) -> bool:
        if not scope.subjects:
            return False
        owners, params = owner_condition(scope)
        query = sql.SQL("SELECT 1 FROM sources WHERE state = 'active' AND {} LIMIT 1").format(
            owners
        )
        with translated_errors("checking access"), self.pool.connection() as conn:
            row = conn.execute(query, params).fetchone()
        return row is not None

    def load_chunks(
        self, scope: AccessScope, chunk_ids: Sequence[str], model_key: str | None = None
    ) -> dict[str, ChunkView]:
        """Only chunks of the version each source publishes for `model_key` (the
        tenant's serving model when None): the publication pointer is joined
        here, at result time, so a search never returns an unpublished version's
        text nor a mix of two versions, whatever the indexes held a moment ago.
        A search whose legs read the indexes just before a switch holds only the
        previous version's ids; for a short grace window those are answered from
        the previous version, one version per source, so it is never empty."""
        if not chunk_ids or not scope.subjects:
            return {}
        ids = id_array(chunk_ids)
        statement = RECHECK_SQL if isinstance(ids, str) else RECHECK_LIST_SQL
        with translated_errors("reading chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                statement,
                (ids, model_key, scope.tenant_id, RETIRE_GRACE_SECONDS, *_owner_params(scope)),
            ).fetchall()
        # one version per source: the published one when any of its chunks is asked for
        current_sources = {r[1] for r in rows if r[11]}
        rows = [r for r in rows if r[11] or r[1] not in current_sources]
        views: dict[str, ChunkView] = {}
        for r in rows:
            views[r[0]] = ChunkView(
                chunk_id=r[0],
                source_id=r[1],
                version_id=r[2],
                title=r[3],
                filename=r[4],
                media_type=r[5],
                heading_path=tuple(r[6]),
                body=r[7],
                location=location_from_json(r[8]),
                content_hash=r[9],
                low_confidence=r[10],
                layer=r[12],
                document_type="artifact" if r[13] == "artifact" else "source",
                # an artifact's document has the origin "artifact:<its id>"
                artifact_id=r[14].removeprefix("artifact:") if r[13] == "artifact" else None,
                source_location=source_location_from_json(r[15]),
                corpus=scope.corpus_of(r[16]),
                parent_id=r[17] or "",
            )
        return views

    def source_status(self, scope: AccessScope, source_id: str) -> dict[str, object] | None:
        """The current version's processing state, if the scope may see the source;
        None both when it does not exist and when it is hidden (no oracle)."""
        if not scope.subjects:
            return None
        with translated_errors("reading a source's status"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT s.source_id, v.version_id, v.version_no, s.filename, v.media_type, "
                    "v.processing_state, v.failure_reason, v.low_confidence, v.warnings, "
                    "(m.published_at IS NOT NULL) AS published "
                    "FROM sources s JOIN source_versions v ON v.version_id = s.current_version_id "
                    # the caller's model: a system corpus source is served at it
                    "JOIN tenants t ON t.tenant_id = %s "
                    "LEFT JOIN version_models m ON m.version_id = v.version_id AND m.model_key = t.active_model "
                    f"WHERE s.source_id = %s AND s.state = 'active' AND {_SOURCE_OWNERS}",
                    (scope.tenant_id, source_id, *_owner_params(scope)),
                )
                .fetchone()
            )
        return dict(row) if row else None

    def extraction_of(self, tenant_id: str, version_id: str) -> ExtractedDocument | None:
        """The stored extraction of exactly this version (None if it has none)."""
        with translated_errors("reading an extraction"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT document FROM extracted_documents WHERE version_id = %s AND tenant_id = %s",
                (version_id, tenant_id),
            ).fetchone()
        return ExtractedDocument.from_dict(row[0]) if row else None

    def current_extraction(
        self, scope: AccessScope, source_id: str, version_no: int | None = None
    ) -> tuple[str, ExtractedDocument | ExtractionFailure | None] | None:
        """(version id, what extraction produced) for the source's current version
        (or version `version_no`, which stays readable after a replacement);
        None when the source or version is absent or hidden from the scope."""
        if not scope.subjects:
            return None
        which = (
            "v.version_id = s.current_version_id"
            if version_no is None
            else "v.source_id = s.source_id AND v.version_no = %s AND v.state = 'stored'"
        )
        params: tuple[object, ...] = (source_id, *_owner_params(scope))
        if version_no is not None:
            params = (version_no, *params)
        with translated_errors("reading an extraction"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT v.version_id, v.processing_state, v.failure_reason, v.failure_detail, d.document "
                f"FROM sources s JOIN source_versions v ON {which} "
                "LEFT JOIN extracted_documents d ON d.version_id = v.version_id "
                f"WHERE s.source_id = %s AND s.state = 'active' AND {_SOURCE_OWNERS}",
                params,
            ).fetchone()
        if row is None:
            return None
        version_id, state, reason, detail, document = row
        if state == "failed":
            return version_id, ExtractionFailure(FailureReason(reason), detail or "")
        if document is None:
            return version_id, None
        return version_id, ExtractedDocument.from_dict(document)

    # sections, citations, drill-down ------------------------------------------------
    def section(
        self, scope: AccessScope, chunk_id: str, model_key: str | None = None
    ) -> list[ChunkView]:
        """The chunk's section in its source version, in order: the children of
        its parent (chunks.parent_id, migration 0038); a chunk without one (the
        summary layer) has the chunks sharing its heading path and layer."""
        if not scope.subjects:
            return []
        with translated_errors("reading a section"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT sib.chunk_id FROM chunks c JOIN chunks sib ON sib.source_id = c.source_id "
                "AND sib.version_id = c.version_id AND sib.layer = c.layer "
                "AND sib.parent_id IS NOT DISTINCT FROM c.parent_id "
                "AND (c.parent_id IS NOT NULL OR sib.heading_path = c.heading_path) "
                "WHERE c.chunk_id = %s AND c.tenant_id = ANY(%s) ORDER BY sib.position LIMIT 200",
                (chunk_id, [owner for owner, _ in scope.readable_owners()]),
            ).fetchall()
        views = self.load_chunks(scope, [r[0] for r in rows], model_key)
        return [views[r[0]] for r in rows if r[0] in views]

    def record_citations(
        self,
        scope: AccessScope,
        key_id: str,
        citations: Sequence[Citation],
        issued_chunk_ids: Sequence[str] = (),
    ) -> list[str]:
        """One statement for every write (data-modifying CTEs): the issued ids,
        the snapshots (each distinct one stored once per tenant, migration 0024)
        and the citations land together or not at all, in one round trip."""
        issued = sorted(set(issued_chunk_ids)) if key_id else []
        if not citations:
            self.record_issued(key_id, issued)
            return []
        ids = citation_ids(len(citations))  # returned in the caller's order
        params = record_params(scope, key_id, citations_document(issued, ids, citations))
        with translated_errors("recording citations"), self.pool.connection() as conn:
            _sweep_expired_issued(conn, key_id)
            conn.execute(RECORD_CITATIONS_SQL, params)
        return ids

    def citation(self, tenant_id: str, citation_id: str) -> dict[str, Any] | None:
        with translated_errors("reading a citation"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT c.citation_id, c.chunk_id, c.source_id, c.version_id, c.content_hash, c.subjects, "
                    # the stored text and the citation's own time, as one snapshot
                    "sn.snapshot || jsonb_build_object('retrieved_at', c.retrieved_at) AS snapshot, "
                    "s.state AS source_state, s.subjects AS current_subjects, "
                    # against what the source publishes now (chunk ids are per
                    # version): is the cited text still there, anywhere in it?
                    "p.version_id AS published_version, EXISTS (SELECT 1 FROM chunks ch "
                    "  WHERE ch.version_id = p.version_id AND ch.content_hash = c.content_hash) "
                    "  AS text_present "
                    "FROM citations c JOIN citation_snapshots sn ON sn.snapshot_id = c.snapshot_id "
                    "LEFT JOIN sources s ON s.source_id = c.source_id "
                    "LEFT JOIN tenants t ON t.tenant_id = c.tenant_id "
                    "LEFT JOIN published_versions p ON p.source_id = c.source_id "
                    "AND p.model_key = t.active_model "
                    "WHERE c.citation_id = %s AND c.tenant_id = %s",
                    (citation_id, tenant_id),
                )
                .fetchone()
            )
        return dict(row) if row else None

    def record_issued(self, key_id: str, chunk_ids: Sequence[str]) -> None:
        """Record chunk ids as handed to this key (see _UPSERT_ISSUED_FROM for the order)."""
        if not chunk_ids or not key_id:
            return
        with translated_errors("recording issued ids"), self.pool.connection() as conn:
            _sweep_expired_issued(conn, key_id)
            conn.execute(_UPSERT_ISSUED, {"key": key_id, "ids": sorted(set(chunk_ids))})

    def issued_recently(
        self, key_id: str, hours: int = ISSUED_WINDOW_HOURS, limit: int = 20
    ) -> list[str]:
        with translated_errors("reading issued ids"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT chunk_id FROM issued_chunks WHERE key_id = %s AND issued_at > now() - make_interval(hours => %s) "
                "ORDER BY issued_at DESC LIMIT %s",
                (key_id, hours, limit),
            ).fetchall()
        return [r[0] for r in rows]

    def was_issued(self, key_id: str, chunk_id: str, hours: int = ISSUED_WINDOW_HOURS) -> bool:
        with translated_errors("checking an issued id"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 FROM issued_chunks WHERE key_id = %s AND chunk_id = %s "
                "AND issued_at > now() - make_interval(hours => %s)",
                (key_id, chunk_id, hours),
            ).fetchone()
        return row is not None

    def browse(
        self, scope: AccessScope, media_type: str | None, after: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Sources visible to the scope, by media type then id, keyset-paged."""
        if not scope.subjects:
            return []
        with translated_errors("listing sources"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT s.source_id, s.filename, coalesce(v.title, s.filename) AS title, v.media_type, "
                    "v.processing_state, v.low_confidence, v.created_at "
                    "FROM sources s JOIN source_versions v ON v.version_id = s.current_version_id "
                    "WHERE s.tenant_id = %s AND s.state = 'active' AND groundwork_readable(s.subjects, %s) "
                    "AND (%s::text IS NULL OR v.media_type = %s) AND (%s::text IS NULL OR s.source_id > %s) "
                    "ORDER BY s.source_id LIMIT %s",
                    (
                        scope.tenant_id,
                        list(scope.subjects),
                        media_type,
                        media_type,
                        after,
                        after,
                        limit,
                    ),
                )
                .fetchall()
            )
        return [dict(r) for r in rows]

    def media_type_counts(self, scope: AccessScope) -> dict[str, int]:
        if not scope.subjects:
            return {}
        with translated_errors("counting sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT v.media_type, count(*) FROM sources s JOIN source_versions v "
                "ON v.version_id = s.current_version_id WHERE s.tenant_id = %s AND s.state = 'active' "
                "AND groundwork_readable(s.subjects, %s) GROUP BY v.media_type ORDER BY count(*) DESC",
                (scope.tenant_id, list(scope.subjects)),
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def first_chunks(
        self, scope: AccessScope, source_ids: Sequence[str], per_source: int = 5
    ) -> dict[str, list[ChunkView]]:
        """The first chunks of each source's published version (for extractive summaries)."""
        if not source_ids or not scope.subjects:
            return {}
        with translated_errors("reading first chunks"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id FROM chunks c JOIN tenants t USING (tenant_id) "
                "JOIN published_versions p ON p.source_id = c.source_id "
                "AND p.version_id = c.version_id AND p.model_key = t.active_model "
                "WHERE c.source_id = ANY(%s) AND c.tenant_id = %s AND c.layer = 'raw' "
                "AND c.position < %s ORDER BY c.source_id, c.position",
                (list(source_ids), scope.tenant_id, per_source),
            ).fetchall()
        views = self.load_chunks(scope, [r[0] for r in rows])
        out: dict[str, list[ChunkView]] = {}
        for r in rows:
            view = views.get(r[0])
            if view is not None:
                out.setdefault(view.source_id, []).append(view)
        return out

    def readable_version(
        self, tenant_id: str, source_id: str, version_id: str
    ) -> tuple[str, str, str] | None:
        """(blob key, filename, media type) if the version exists and is not deleted."""
        with translated_errors("reading a version"), self.pool.connection() as conn:
            row = conn.execute(
                "SELECT v.blob_key, s.filename, v.media_type FROM source_versions v JOIN sources s USING (source_id) "
                "WHERE v.version_id = %s AND v.source_id = %s AND v.tenant_id = %s AND v.state = 'stored' "
                "AND s.state = 'active'",
                (version_id, source_id, tenant_id),
            ).fetchone()
        return (row[0], row[1], row[2]) if row else None


class PublishedChunkReader:
    """The ChunkReader a search for one model uses: reads only what each source
    publishes for that model (a candidate model's eval reads its own pointer)."""

    def __init__(self, reading: Reading, model_key: str) -> None:
        self._reading = reading
        self.model_key = model_key

    def load_chunks(self, scope: AccessScope, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        return self._reading.load_chunks(scope, chunk_ids, self.model_key)

    def has_accessible_sources(self, scope: AccessScope) -> bool:
        return self._reading.has_accessible_sources(scope)

    def section(self, scope: AccessScope, chunk_id: str) -> list[ChunkView]:
        return self._reading.section(scope, chunk_id, self.model_key)
