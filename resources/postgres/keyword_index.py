"""The KeywordIndex port on PostgreSQL full-text search (`simple` configuration,
`ts_rank_cd`). For installs without Java; OpenSearch is the default.

`simple` does no stemming and drops no stopwords, and its parser keeps a
hyphenated identifier such as err-4021 as a token alongside its parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from psycopg import sql

from groundwork.ports import AccessScope, IndexedChunk, ScoredChunk, SearchFilters
from groundwork.retrieval.query import code_pattern, keyword_query
from resources.postgres.chunk_rows import ChunkRowTable, filter_conditions, owner_condition
from resources.postgres.database import document_refusals, translated_errors
from resources.postgres.tenant_wall import ConnectionSource

_TERM = re.compile(r"[\w][\w\-./]*[\w]|[\w]", re.UNICODE)


#: rank added for each of a query's codes found as written, over ts_rank_cd's
#: (which is mostly below 1 for a chunk): "which paper mentions METTL3" ranked
#: the chunks saying "paper" and "mentions" first, and the text parser splits
#: eat-2 and reads Kir5.1 as one token, so the code alone never matched them
CODE_MATCH_RANK = 1.0


def _or_query(text: str) -> str:
    """Any-term tsquery text: BM25-like recall rather than all-terms precision."""
    terms = {t.lower() for t in _TERM.findall(text)}
    return " OR ".join(sorted(terms))


class PostgresKeywordIndex(ChunkRowTable):
    def __init__(self, pool: ConnectionSource) -> None:
        super().__init__(pool, "keyword_chunks")

    def ensure_schema(self) -> None:
        with translated_errors("checking the keyword table"), self.pool.connection() as conn:
            row = conn.execute("SELECT to_regclass('keyword_chunks')").fetchone()
        if row is None or row[0] is None:
            from groundwork.errors import StoreError

            raise StoreError("keyword_chunks is missing; run the migrations")

    def compact(self, tenant_id: str) -> bool:
        """Nothing to start: autovacuum reclaims the rows rewrites leave."""
        return False

    def upsert(self, chunks: Sequence[IndexedChunk]) -> int:
        if not chunks:
            return 0
        with translated_errors("writing keyword documents"), self.pool.connection() as conn:
            with document_refusals("a keyword document"), conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO keyword_chunks (chunk_id, tenant_id, source_id, version_id, subjects, "
                    "media_type, title, content, content_hash, live, tags, source_date, layer, "
                    "document_type) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, false, %s, %s, %s, %s) "
                    "ON CONFLICT (chunk_id) DO UPDATE SET tenant_id = excluded.tenant_id, "
                    "source_id = excluded.source_id, version_id = excluded.version_id, "
                    "subjects = excluded.subjects, media_type = excluded.media_type, "
                    "title = excluded.title, content = excluded.content, "
                    "content_hash = excluded.content_hash, tags = excluded.tags, "
                    "source_date = excluded.source_date, layer = excluded.layer, "
                    "document_type = excluded.document_type, "
                    "live = keyword_chunks.live AND keyword_chunks.version_id = excluded.version_id",
                    [
                        (
                            c.chunk_id,
                            c.tenant_id,
                            c.source_id,
                            c.version_id,
                            list(c.subjects),
                            c.media_type,
                            c.title,
                            c.content,
                            c.content_hash,
                            list(c.tags),
                            c.source_date,
                            c.layer,
                            c.document_type,
                        )
                        # one lock order for every writer: concurrent upserts never deadlock
                        for c in sorted(chunks, key=lambda c: c.chunk_id)
                    ],
                )
                self._raise_where_live(conn, [c.chunk_id for c in chunks])
        return len(chunks)

    def search(
        self,
        scope: AccessScope,
        query: str,
        limit: int,
        filters: SearchFilters | None = None,
    ) -> list[ScoredChunk]:
        parsed = keyword_query(query)
        terms = _or_query(" ".join([parsed.words, *parsed.phrases]))
        if not scope.subjects or limit <= 0 or not terms:
            return []
        extra, extra_params = filter_conditions(filters)
        # a code as written (code_pattern) ranks on top of its words and, as
        # OpenSearch's exact clause, matches on its own: Kir5 finds Kir5.1
        code_rank = sql.SQL(" + ").join(
            [
                sql.SQL("ts_rank_cd(tsv, q)"),
                *(sql.SQL("CASE WHEN content ~* %s THEN %s ELSE 0 END") for _ in parsed.codes),
            ]
        )
        patterns = [code_pattern(code) for code in parsed.codes]
        code_params: list[object] = [
            value for pattern in patterns for value in (pattern, CODE_MATCH_RANK)
        ]
        # quoted phrases must appear as written (phraseto_tsquery: words in
        # order, adjacent); otherwise any word, or any code, matches; all rank
        matched = (
            sql.SQL("tsv @@ ({})").format(
                sql.SQL(" && ").join(
                    sql.SQL("phraseto_tsquery('simple', %s)") for _ in parsed.phrases
                )
            )
            if parsed.phrases
            else sql.SQL("(tsv @@ q{})").format(
                sql.SQL("").join(sql.SQL(" OR content ~* %s") for _ in parsed.codes)
            )
        )
        owners, owner_params = owner_condition(scope)
        conditions = [owners, sql.SQL("live"), matched, *extra]
        params: list[object] = [
            *code_params,
            terms,
            *owner_params,
            *(parsed.phrases or patterns),
            *extra_params,
        ]
        statement = sql.SQL(
            "SELECT chunk_id, source_id, version_id, {} AS rank "
            "FROM keyword_chunks, websearch_to_tsquery('simple', %s) q WHERE {} "
            "ORDER BY rank DESC, chunk_id LIMIT %s"
        ).format(code_rank, sql.SQL(" AND ").join(conditions))
        with translated_errors("searching keywords"), self.pool.connection() as conn:
            rows = conn.execute(statement, [*params, limit]).fetchall()
        return [ScoredChunk(r[0], r[1], r[2], float(r[3])) for r in rows]
