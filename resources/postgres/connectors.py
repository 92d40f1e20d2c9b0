"""The ConnectorCatalog port on PostgreSQL (migrations 0029, 0032, 0036, 0042).

A page of a listing is compared with the catalog in one statement
(`compare_page`), a read: a pass over an unchanged source writes nothing and
reads no item (marking each listed row seen cost an update of every row,
about 1 s per 1,000-key page on the loaded test machine). Subjects travel as one string
joined by the unit separator (unnest cannot take ragged arrays).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, LiteralString

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from groundwork.connectors.catalog import (
    ConnectorInstance,
    ConnectorState,
    DeltaKind,
    ItemDelta,
    ItemRecord,
    ItemState,
    KnownItem,
    PassCounts,
    PassStart,
)
from groundwork.connectors.port import RACY_MARK
from resources.postgres.database import translated_errors
from resources.postgres.tenant_wall import ConnectionSource

SEP = "\x1f"
_INSTANCE_COLUMNS = (
    "instance_id, tenant_id, kind, name, config, secret_refs, subjects, paused, "
    "freshness_seconds, interval_seconds, created_at"
)


def _page_params(
    tenant_id: str, instance_id: str, listed: Sequence[tuple[str, str, tuple[str, ...]]]
) -> dict[str, Any]:
    """A listing page as the arrays the comparing statements unnest."""
    return {
        "t": tenant_id,
        "i": instance_id,
        "ids": [x[0] for x in listed],
        "versions": [x[1] for x in listed],
        "subjects": [_joined(x[2]) for x in listed],
    }


def _joined(subjects: Sequence[str] | None) -> str | None:
    return None if subjects is None else SEP.join(sorted(set(subjects)))


def _instance(row: dict[str, Any]) -> ConnectorInstance:
    return ConnectorInstance(
        instance_id=row["instance_id"],
        tenant_id=row["tenant_id"],
        kind=row["kind"],
        name=row["name"],
        config=dict(row["config"] or {}),
        secret_refs=dict(row["secret_refs"] or {}),
        subjects=tuple(row["subjects"]),
        paused=bool(row["paused"]),
        freshness_seconds=int(row["freshness_seconds"]),
        interval_seconds=int(row["interval_seconds"]),
        created_at=row["created_at"],
    )


def _known(row: dict[str, Any]) -> KnownItem:
    subjects = row.get("subjects")
    return KnownItem(
        row["item_id"],
        row["version"],
        row["source_id"],
        row["origin"],
        row["sha256"],
        row["state"],
        tuple(subjects) if subjects is not None else None,
        tuple(sorted((row.get("location") or {}).items())),
        tuple(row["links"]) if row.get("links") is not None else None,
    )


#: an instance's items as KnownItem reads them; the caller adds the conditions
_KNOWN_ITEMS = (
    "SELECT item_id, version, source_id, origin, sha256, state, subjects, location, links "
    "FROM connector_items WHERE tenant_id = %(t)s AND instance_id = %(i)s "
)


#: a page's listed items the catalog does not hold as listed, or holds as
#: listed but last read longer than %(verify)s seconds ago (NULL: never due);
#: `page` is the listing (item id, version, subjects joined)
_COMPARE_FROM_PAGE = (
    "SELECT page.item_id, c.version AS known, c.source_id, c.origin, c.subjects, c.state,"
    "  page.version AS listed, c.sha256,"
    "  array_to_string(c.subjects, E'\\x1f') IS DISTINCT FROM page.subj AS rescoped FROM page"
    "  LEFT JOIN connector_items c ON c.tenant_id = %(t)s"
    "  AND c.instance_id = %(i)s AND c.item_id = page.item_id"
    "  WHERE c.item_id IS NULL OR c.state IN ('failed', 'gone') OR c.version <> page.version"
    "  OR (c.state = 'ok'"
    "    AND array_to_string(c.subjects, E'\\x1f') IS DISTINCT FROM page.subj)"
    "  OR (c.state = 'ok' AND %(verify)s::float8 IS NOT NULL"
    "    AND c.updated_at < now() - make_interval(secs => %(verify)s::float8))"
)
_COMPARE = (
    "WITH page AS (SELECT * FROM unnest(%(ids)s::text[], %(versions)s::text[],"
    "  %(subjects)s::text[]) AS page (item_id, version, subj)) " + _COMPARE_FROM_PAGE
)


def _delta(row: Sequence[Any]) -> ItemDelta:
    item_id, known, source_id, origin, subjects, state, listed_version, sha, rescoped = row
    kind: DeltaKind = (
        "new"
        if state is None
        else "returned"
        if state == "gone"
        else "retry"
        if state == "failed"
        else "changed"
        if known != listed_version
        else "rescope"
        if rescoped
        else "verify"
    )
    return ItemDelta(
        item_id,
        kind,
        known,
        source_id,
        origin,
        tuple(subjects) if subjects is not None else None,
        sha,
    )


class PostgresConnectorCatalog:
    def __init__(self, pool: ConnectionSource) -> None:
        self.pool = pool

    def add_instance(self, instance: ConnectorInstance) -> ConnectorInstance:
        with translated_errors("adding a connector"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "INSERT INTO connector_instances (instance_id, tenant_id, kind, name, config, "
                    "secret_refs, subjects, paused, freshness_seconds, interval_seconds) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    f"ON CONFLICT (tenant_id, name) DO NOTHING RETURNING {_INSTANCE_COLUMNS}",
                    (
                        instance.instance_id,
                        instance.tenant_id,
                        instance.kind,
                        instance.name,
                        Jsonb(dict(instance.config)),
                        Jsonb(dict(instance.secret_refs)),
                        list(instance.subjects),
                        instance.paused,
                        instance.freshness_seconds,
                        instance.interval_seconds,
                    ),
                )
                .fetchone()
            )
        if row is None:
            raise KeyError(instance.name)
        return _instance(row)

    def instances(
        self, tenant_id: str | None = None, kind: str | None = None
    ) -> list[ConnectorInstance]:
        with translated_errors("listing connectors"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_INSTANCE_COLUMNS} FROM connector_instances "
                    "WHERE (%(t)s::text IS NULL OR tenant_id = %(t)s) "
                    "AND (%(k)s::text IS NULL OR kind = %(k)s) ORDER BY tenant_id, name",
                    {"t": tenant_id, "k": kind},
                )
                .fetchall()
            )
        return [_instance(r) for r in rows]

    def instance(self, tenant_id: str, name: str) -> ConnectorInstance | None:
        with translated_errors("reading a connector"), self.pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_INSTANCE_COLUMNS} FROM connector_instances "
                    "WHERE tenant_id = %s AND (name = %s OR instance_id = %s)",
                    (tenant_id, name, name),
                )
                .fetchone()
            )
        return _instance(row) if row else None

    def due_instances(self, kind: str, *, paused_behind: bool = False) -> list[ConnectorInstance]:
        with translated_errors("reading due connectors"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_INSTANCE_COLUMNS} FROM connector_instances i WHERE kind = %(k)s "
                    "AND ((NOT paused AND (pass_open OR NOT EXISTS (SELECT 1 FROM connector_passes p "
                    "WHERE p.instance_id = i.instance_id "
                    "AND p.started_at > now() - i.interval_seconds * interval '1 second'))) "
                    "OR (%(pb)s AND paused AND NOT EXISTS (SELECT 1 FROM connector_passes p "
                    "WHERE p.instance_id = i.instance_id AND p.finished_at IS NOT NULL "
                    "AND p.started_at > now() - i.freshness_seconds * interval '1 second'))) "
                    "ORDER BY tenant_id, name",
                    {"k": kind, "pb": paused_behind},
                )
                .fetchall()
            )
        return [_instance(r) for r in rows]

    def set_paused(self, tenant_id: str, instance_id: str, paused: bool) -> bool:
        with translated_errors("pausing a connector"), self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE connector_instances SET paused = %s WHERE tenant_id = %s "
                "AND instance_id = %s RETURNING 1",
                (paused, tenant_id, instance_id),
            ).fetchone()
        return row is not None

    def remove_instance(self, tenant_id: str, instance_id: str) -> bool:
        with translated_errors("removing a connector"), self.pool.connection() as conn:
            row = conn.execute(
                "DELETE FROM connector_instances WHERE tenant_id = %s AND instance_id = %s "
                "RETURNING 1",
                (tenant_id, instance_id),
            ).fetchone()
        return row is not None

    def begin_pass(self, tenant_id: str, instance_id: str, complete_listing: bool) -> PassStart:
        with translated_errors("beginning a pass"), self.pool.connection() as conn:
            before = conn.execute(
                "SELECT pass_open FROM connector_instances WHERE tenant_id = %s "
                "AND instance_id = %s FOR UPDATE",
                (tenant_id, instance_id),
            ).fetchone()
            if before is None:
                raise KeyError(instance_id)
            resumed = bool(before[0])
            row = conn.execute(
                "UPDATE connector_instances SET pass_open = true, "
                "pass_no = pass_no + CASE WHEN pass_open THEN 0 ELSE 1 END, "
                "cursor = CASE WHEN pass_open OR NOT %s THEN cursor END "
                "WHERE tenant_id = %s AND instance_id = %s RETURNING pass_no, cursor",
                (complete_listing, tenant_id, instance_id),
            ).fetchone()
            assert row is not None
            conn.execute(
                "INSERT INTO connector_passes (tenant_id, instance_id, pass_no) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (tenant_id, instance_id, row[0]),
            )
        return PassStart(int(row[0]), row[1], resumed)

    def compare_page(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        listed: Sequence[tuple[str, str, tuple[str, ...]]],
        *,
        verify_after: float | None = None,
    ) -> list[ItemDelta]:
        if not listed:
            return []
        params = {**_page_params(tenant_id, instance_id, listed), "verify": verify_after}
        with translated_errors("comparing a listing page"), self.pool.connection() as conn:
            rows = conn.execute(_COMPARE, params).fetchall()
        return [_delta(row) for row in rows]

    def compare_span(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        listed: Sequence[tuple[str, str, tuple[str, ...]]],
        span: tuple[str | None, str | None],
        *,
        verify_after: float | None = None,
    ) -> tuple[list[ItemDelta], list[KnownItem]]:
        params = {
            **_page_params(tenant_id, instance_id, listed),
            "after": span[0],
            "through": span[1],
            "verify": verify_after,
        }
        with translated_errors("comparing a listing page"), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "WITH page AS (SELECT * FROM unnest(%(ids)s::text[], %(versions)s::text[],"
                    "  %(subjects)s::text[]) AS page (item_id, version, subj)),"
                    " compared AS (" + _COMPARE_FROM_PAGE + ") "
                    "SELECT false AS gone, compared.*, NULL::jsonb AS location, NULL::text[] AS links "
                    "FROM compared UNION ALL "
                    "SELECT true, c.item_id, c.version, c.source_id, c.origin, c.subjects, c.state,"
                    "  NULL, c.sha256, false, c.location, c.links FROM connector_items c"
                    "  WHERE c.tenant_id = %(t)s AND c.instance_id = %(i)s AND c.state <> 'gone'"
                    # byte order, as the listing sorts (and its index, 0042, holds)
                    '  AND (%(after)s::text IS NULL OR c.item_id COLLATE "C" > %(after)s::text)'
                    '  AND (%(through)s::text IS NULL OR c.item_id COLLATE "C" <= %(through)s::text)'
                    "  AND NOT EXISTS (SELECT 1 FROM page WHERE page.item_id = c.item_id)",
                    params,
                )
                .fetchall()
            )
        deltas = [_delta(tuple(r.values())[1:10]) for r in rows if not r["gone"]]
        # the union's columns are named by its first arm: "known" is the version
        gone = [_known({**r, "version": r["known"]}) for r in rows if r["gone"]]
        return deltas, gone

    def live_versions(self, tenant_id: str, source_id: str) -> dict[str, str]:
        with translated_errors("reading published versions"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT model_key, version_id FROM published_versions "
                "WHERE tenant_id = %s AND source_id = %s",
                (tenant_id, source_id),
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def record_items(
        self, tenant_id: str, instance_id: str, pass_no: int, records: Sequence[ItemRecord]
    ) -> None:
        if not records:
            return
        columns: dict[str, list[Any]] = {
            "ids": [r.item_id for r in records],
            "versions": [r.version for r in records],
            "subjects": [_joined(r.subjects) for r in records],
            "sources": [r.source_id for r in records],
            "origins": [r.origin for r in records],
            "shas": [r.sha256 for r in records],
            "states": [r.state for r in records],
            "errors": [r.last_error for r in records],
            # JSON text per row: unnest cannot take a jsonb[] built from dicts
            "locations": [json.dumps(dict(r.location)) for r in records],
            # in the listing's order (a crawl follows them in it)
            "links": [None if r.links is None else SEP.join(r.links) for r in records],
        }
        with translated_errors("recording items"), self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO connector_items (tenant_id, instance_id, item_id, version, subjects, "
                "source_id, origin, sha256, state, last_error, seen_pass, location, links) "
                "SELECT %(t)s, %(i)s, r.item_id, r.version, string_to_array(r.subj, E'\\x1f'), "
                "r.source_id, r.origin, r.sha256, r.state, r.err, %(p)s, r.loc::jsonb, "
                "string_to_array(r.links, E'\\x1f') FROM unnest("
                "%(ids)s::text[], %(versions)s::text[], %(subjects)s::text[], %(sources)s::text[], "
                "%(origins)s::text[], %(shas)s::text[], %(states)s::text[], %(errors)s::text[], "
                "%(locations)s::text[], %(links)s::text[]) "
                "AS r(item_id, version, subj, source_id, origin, sha256, state, err, loc, links) "
                "ON CONFLICT (instance_id, item_id) DO UPDATE SET version = excluded.version, "
                "subjects = excluded.subjects, source_id = excluded.source_id, "
                "origin = excluded.origin, sha256 = excluded.sha256, state = excluded.state, "
                "last_error = excluded.last_error, seen_pass = excluded.seen_pass, "
                "location = excluded.location, links = excluded.links, updated_at = now()",
                {"t": tenant_id, "i": instance_id, "p": pass_no, **columns},
            )

    def save_cursor(self, tenant_id: str, instance_id: str, cursor: str | None) -> None:
        with translated_errors("saving a cursor"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE connector_instances SET cursor = %s WHERE tenant_id = %s "
                "AND instance_id = %s",
                (cursor, tenant_id, instance_id),
            )

    def known_items(
        self,
        tenant_id: str,
        instance_id: str,
        *,
        item_ids: Sequence[str] | None = None,
        sha256s: Sequence[str] | None = None,
        states: Sequence[ItemState] | None = None,
    ) -> list[KnownItem]:
        return self._known_items(
            "reading items",
            "AND (%(ids)s::text[] IS NULL OR item_id = ANY(%(ids)s)) "
            "AND (%(shas)s::text[] IS NULL OR sha256 = ANY(%(shas)s)) "
            "AND (%(states)s::text[] IS NULL OR state = ANY(%(states)s)) ",
            {
                "t": tenant_id,
                "i": instance_id,
                "ids": list(item_ids) if item_ids is not None else None,
                "shas": list(sha256s) if sha256s is not None else None,
                "states": list(states) if states is not None else None,
            },
        )

    def unseen_items(
        self, tenant_id: str, instance_id: str, listed: Sequence[str]
    ) -> list[KnownItem]:
        return self._known_items(
            "reading unseen items",
            "AND item_id <> ALL(%(listed)s) ",
            {"t": tenant_id, "i": instance_id, "listed": list(listed)},
        )

    def _known_items(
        self, doing: str, conditions: LiteralString, params: dict[str, Any]
    ) -> list[KnownItem]:
        """An instance's items under `conditions` (SQL text of this module,
        never of a caller's values), in id order."""
        with translated_errors(doing), self.pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(_KNOWN_ITEMS + conditions + "ORDER BY item_id", params)
                .fetchall()
            )
        return [_known(r) for r in rows]

    def forget_items(self, tenant_id: str, instance_id: str, item_ids: Sequence[str]) -> None:
        if not item_ids:
            return
        with translated_errors("forgetting items"), self.pool.connection() as conn:
            conn.execute(
                "DELETE FROM connector_items WHERE tenant_id = %s AND instance_id = %s "
                "AND item_id = ANY(%s)",
                (tenant_id, instance_id, list(item_ids)),
            )

    def finish_pass(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        counts: PassCounts,
        *,
        keep_cursor: bool,
        finished: bool = True,
    ) -> None:
        with translated_errors("finishing a pass"), self.pool.connection() as conn:
            conn.execute(
                "UPDATE connector_passes SET seen = seen + %(seen)s, changed = changed + %(ch)s, "
                "deleted = deleted + %(del)s, failed = failed + %(fail)s, "
                "rescoped = rescoped + %(re)s, last_error = %(err)s, "
                "notes = ARRAY(SELECT DISTINCT unnest(notes || %(notes)s::text[]) ORDER BY 1), "
                "finished_at = CASE WHEN %(fin)s THEN now() END "
                "WHERE tenant_id = %(t)s AND instance_id = %(i)s AND pass_no = %(p)s",
                {
                    "seen": counts.seen,
                    "ch": counts.changed,
                    "del": counts.deleted,
                    "fail": counts.failed,
                    "re": counts.rescoped,
                    "err": counts.last_error,
                    "notes": list(counts.notes),
                    "fin": finished,
                    "t": tenant_id,
                    "i": instance_id,
                    "p": pass_no,
                },
            )
            if finished:
                conn.execute(
                    "UPDATE connector_instances SET pass_open = false, "
                    "cursor = CASE WHEN %s THEN cursor END "
                    "WHERE tenant_id = %s AND instance_id = %s",
                    (keep_cursor, tenant_id, instance_id),
                )

    def items_due(
        self, kind: str, tenant_ids: Sequence[str], verify_after_seconds: float
    ) -> set[str]:
        if not tenant_ids:
            return set()
        with translated_errors("reading items due"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT c.tenant_id FROM connector_items c "
                "JOIN connector_instances i ON i.instance_id = c.instance_id "
                "WHERE i.kind = %(k)s AND c.tenant_id = ANY(%(t)s) AND (c.state = 'failed' "
                "OR strpos(c.version, %(racy)s) > 0 "
                "OR (c.state = 'ok' AND c.updated_at < now() - make_interval(secs => %(v)s)))",
                {"k": kind, "t": list(tenant_ids), "v": verify_after_seconds, "racy": RACY_MARK},
            ).fetchall()
        return {r[0] for r in rows}

    def state(self, tenant_id: str, instance_id: str) -> ConnectorState | None:
        with translated_errors("reading a connector's state"), self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            row = cur.execute(
                f"SELECT {_INSTANCE_COLUMNS}, pass_no FROM connector_instances "
                "WHERE tenant_id = %s AND instance_id = %s",
                (tenant_id, instance_id),
            ).fetchone()
            if row is None:
                return None
            last = cur.execute(
                "SELECT pass_no, started_at, finished_at, seen, changed, deleted, failed, "
                "rescoped, last_error, notes FROM connector_passes WHERE instance_id = %s "
                "ORDER BY pass_no DESC LIMIT 1",
                (instance_id,),
            ).fetchone()
            lag = cur.execute(
                "SELECT extract(epoch FROM now() - max(started_at))::float8 AS lag "
                "FROM connector_passes WHERE instance_id = %s AND finished_at IS NOT NULL",
                (instance_id,),
            ).fetchone()
            errors = cur.execute(
                "SELECT item_id, last_error FROM connector_items WHERE instance_id = %s "
                "AND state IN ('refused', 'failed') ORDER BY updated_at DESC LIMIT 20",
                (instance_id,),
            ).fetchall()
            items = cur.execute(
                "SELECT count(*) AS n FROM connector_items WHERE instance_id = %s "
                "AND state IN ('ok', 'alias')",
                (instance_id,),
            ).fetchone()
        counts = PassCounts()
        if last is not None:
            counts = PassCounts(
                last["seen"],
                last["changed"],
                last["deleted"],
                last["failed"],
                last["rescoped"],
                last["last_error"],
                tuple(last["notes"] or ()),
            )
        return ConnectorState(
            instance=_instance(row),
            last_pass_no=int(row["pass_no"]),
            last_started=last["started_at"] if last else None,
            last_finished=last["finished_at"] if last else None,
            counts=counts,
            lag_seconds=lag["lag"] if lag else None,
            item_errors=tuple((e["item_id"], e["last_error"] or "") for e in errors),
            items=int(items["n"]) if items else 0,
        )

    def source_ids(self, tenant_id: str, instance_id: str) -> list[str]:
        with translated_errors("listing a connector's sources"), self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT source_id FROM connector_items WHERE tenant_id = %s "
                "AND instance_id = %s AND source_id IS NOT NULL AND state = 'ok'",
                (tenant_id, instance_id),
            ).fetchall()
        return sorted(r[0] for r in rows)
