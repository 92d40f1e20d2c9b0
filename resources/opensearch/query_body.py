"""The query bodies the keyword index sends: a query's codes as written, the
search filters and layer, and the liveness a write changes.
"""

from __future__ import annotations

import re
from typing import Any

from groundwork.ports import AccessScope, SearchFilters, search_layer
from groundwork.retrieval.query import keyword_query

#: what a search reads of each hit, all from doc values. Loading a stored
#: field (the `_id` or `_source`) decompresses the block of documents holding
#: it for every hit: 1.3 of 4.6 ms of node CPU per 50-hit search on the
#: SciFact tenant (15,206 chunks; /tmp-only script, 300 train queries).
HIT_FIELDS = ("chunk_id", "source_id", "version_id")

#: weight of a query's code found as written, on top of its ordinary match.
#: Issue 20: "which paper mentions METTL3" ranked chunks saying "paper" and
#: "mentions" above the one naming METTL3, and "eat-2" (two common words to the
#: text analysis) fell to rank 10.
CODE_BOOST = 1.0


def code_clause(code: str) -> dict[str, Any]:
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


def changing(live: bool) -> dict[str, Any]:
    """Documents whose liveness is not `live` yet: only they are rewritten. Every
    rewrite leaves a deleted copy that counts in the tenant's ranking statistics
    (document frequencies) until a merge purges it, so a second model publishing
    the same versions, or a run finishing a crashed publication, rewrote the
    tenant's whole index and moved its scores (measured: 11,756 deleted beside
    15,206 live documents in a SciFact eval tenant)."""
    return {"bool": {"must_not": {"term": {"live": live}}}}


def document_type_clause(document_types: tuple[str, ...]) -> dict[str, Any]:
    """Documents of these document types. A document written before the field
    existed carries none and is read as a registered file's ("source"): the
    migration that added the field (0033) sent every artifact's current version
    through the keyword stage again, so once that run is done only sources lack
    it (until then an old artifact document counts as a source)."""
    kinds: list[dict[str, Any]] = [{"terms": {"document_type": list(document_types)}}]
    if "source" in document_types:
        kinds.append({"bool": {"must_not": {"exists": {"field": "document_type"}}}})
    return {"bool": {"should": kinds, "minimum_should_match": 1}}


def owner_clause(scope: AccessScope) -> dict[str, Any]:
    """Each corpus the scope reads (its tenant's own, the system corpus's),
    each owner with its own subjects; one owner is the plain pair of terms."""
    arms = [
        {
            "bool": {
                "filter": [{"term": {"tenant_id": owner}}, {"terms": {"subjects": list(subjects)}}]
            }
        }
        for owner, subjects in scope.readable_owners()
    ]
    if len(arms) == 1:
        return arms[0]
    return {"bool": {"should": arms, "minimum_should_match": 1}}


def search_body(
    scope: AccessScope, query: str, limit: int, filters: SearchFilters | None
) -> dict[str, Any]:
    """The whole search request: the authorization filter (tenant, live,
    subjects) inside the query itself, never applied after it (invariant 1),
    then the layer, the caller's filters and the ranking clauses."""
    parsed = keyword_query(query)
    ranked = parsed.words or " ".join(parsed.phrases)
    clauses: list[dict[str, Any]] = [owner_clause(scope), {"term": {"live": True}}]
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
    if filters and filters.document_types is not None:
        clauses.append(document_type_clause(filters.document_types))
    body = {
        "size": limit,
        "_source": False,
        "stored_fields": "_none_",
        "docvalue_fields": list(HIT_FIELDS),
        "query": {
            "bool": {
                "filter": clauses,
                "must_not": excluded,
                # Measured on SciFact train (nDCG@10): content alone 0.695; with
                # content.ident at boost 2 and title 0.5, 0.667. The identifier
                # field stays at a low boost so ERR-4021 still wins exact matches.
                # quoted phrases must appear as written; the other words rank
                "must": [
                    {"match_phrase": {"content": {"query": phrase}}} for phrase in parsed.phrases
                ],
                "should": [
                    {"match": {"content": {"query": ranked}}},
                    {"match": {"content.ident": {"query": ranked, "boost": 0.3}}},
                    *(code_clause(code) for code in parsed.codes),
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
    return body
