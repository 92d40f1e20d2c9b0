"""The compiled overview pages (OverviewLedger)."""

from __future__ import annotations

from groundwork.overview import OverviewInput, OverviewPage, OverviewSource, OverviewStatement
from groundwork.ports import AccessScope
from resources.postgres.catalog_parts.common import StoreBase
from resources.postgres.database import translated_errors

#: live sources and the version each publishes for the tenant's serving model,
#: with the compile time of that version's summary (its stamp)
_INPUTS = (
    "FROM sources s JOIN tenants t ON t.tenant_id = s.tenant_id "
    "JOIN published_versions p ON p.source_id = s.source_id AND p.model_key = t.active_model "
    "JOIN source_versions v ON v.version_id = p.version_id "
    "LEFT JOIN version_summaries m ON m.version_id = p.version_id "
    "WHERE s.tenant_id = %s AND s.state = 'active' "
)
_STAMP = "coalesce(extract(epoch FROM m.compiled_at)::text, '')"
#: a version's section headings: each raw chunk's innermost heading, in the
#: order they first appear (bounded: the page names a few)
_SECTIONS = (
    "ARRAY(SELECT h FROM (SELECT c.heading_path[cardinality(c.heading_path)] AS h, "
    "min(c.position) AS first FROM chunks c WHERE c.version_id = p.version_id "
    "AND c.layer = 'raw' AND cardinality(c.heading_path) > 0 GROUP BY 1 "
    "ORDER BY first LIMIT 8) hs)"
)
_RECORD = (
    "SELECT tenant_id, inputs_digest, source_count, tokens, tokenizer, compiled_at, "
    "stale_since IS NOT NULL FROM overview_pages WHERE tenant_id = %s"
)


class Overviews(StoreBase):
    def overview_inputs(self, tenant_id: str) -> list[OverviewInput]:
        with translated_errors("reading overview inputs"), self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT s.source_id, p.version_id, {_STAMP} {_INPUTS} ORDER BY s.source_id",
                (tenant_id,),
            ).fetchall()
        return [OverviewInput(r[0], r[1], r[2]) for r in rows]

    def overview_sources(self, tenant_id: str) -> list[OverviewSource]:
        with translated_errors("reading overview sources"), self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT s.source_id, p.version_id, {_STAMP}, "
                "coalesce(nullif(v.title, ''), s.filename), v.media_type, "
                "coalesce(m.pointers, '{}'), "
                "(SELECT coalesce(string_agg(c.body, ' ' ORDER BY c.position), '') FROM chunks c "
                "WHERE c.version_id = p.version_id AND c.layer = 'summary'), "
                f"{_SECTIONS} {_INPUTS} ORDER BY s.source_id",
                (tenant_id,),
            ).fetchall()
        return [
            OverviewSource(r[0], r[1], r[2], r[3], r[4], r[6], tuple(r[7]), tuple(r[5]))
            for r in rows
        ]

    def save_overview(self, page: OverviewPage) -> None:
        with translated_errors("saving an overview page"), self.pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    "INSERT INTO overview_pages (tenant_id, inputs_digest, source_count, tokens, "
                    "tokenizer) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant_id) DO UPDATE "
                    "SET inputs_digest = excluded.inputs_digest, "
                    "source_count = excluded.source_count, tokens = excluded.tokens, "
                    "tokenizer = excluded.tokenizer, compiled_at = now(), stale_since = NULL, "
                    "stale_reason = NULL",
                    (
                        page.tenant_id,
                        page.inputs_digest,
                        page.source_count,
                        page.tokens,
                        page.tokenizer,
                    ),
                )
                conn.execute(
                    "DELETE FROM overview_statements WHERE tenant_id = %s", (page.tenant_id,)
                )
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO overview_statements "
                        "(tenant_id, position, source_id, version_id, title, body, pointers) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [
                            (
                                page.tenant_id,
                                n,
                                s.source_id,
                                s.version_id,
                                s.title,
                                s.text,
                                list(s.pointers),
                            )
                            for n, s in enumerate(page.statements)
                        ],
                    )

    def overview_record(self, tenant_id: str) -> OverviewPage | None:
        with translated_errors("reading an overview page"), self.pool.connection() as conn:
            row = conn.execute(_RECORD, (tenant_id,)).fetchone()
        return _page(row, ()) if row else None

    def mark_overview_stale(self, tenant_id: str, reason: str) -> int:
        with translated_errors("marking an overview page stale"), self.pool.connection() as conn:
            return conn.execute(
                "UPDATE overview_pages SET stale_since = now(), stale_reason = %s "
                "WHERE tenant_id = %s AND stale_since IS NULL",
                (reason, tenant_id),
            ).rowcount

    def overview_page(self, scope: AccessScope) -> OverviewPage | None:
        if not scope.subjects:
            return None
        with translated_errors("reading an overview page"), self.pool.connection() as conn:
            row = conn.execute(_RECORD, (scope.tenant_id,)).fetchone()
            if row is None:
                return None
            rows = conn.execute(
                "SELECT st.source_id, st.version_id, st.title, st.body, st.pointers "
                "FROM overview_statements st JOIN sources s ON s.source_id = st.source_id "
                "WHERE st.tenant_id = %s AND s.tenant_id = %s AND s.state = 'active' "
                "AND groundwork_readable(s.subjects, %s) ORDER BY st.position",
                (scope.tenant_id, scope.tenant_id, list(scope.subjects)),
            ).fetchall()
        return _page(
            row, tuple(OverviewStatement(r[0], r[1], r[2], r[3], tuple(r[4])) for r in rows)
        )


def _page(row: tuple[object, ...], statements: tuple[OverviewStatement, ...]) -> OverviewPage:
    compiled_at = row[5]
    return OverviewPage(
        tenant_id=str(row[0]),
        statements=statements,
        source_count=int(row[2]),  # type: ignore[call-overload]
        inputs_digest=str(row[1]),
        tokens=int(row[3]),  # type: ignore[call-overload]
        tokenizer=str(row[4]),
        compiled_at=compiled_at.isoformat() if hasattr(compiled_at, "isoformat") else "",
        stale=bool(row[6]),
    )
