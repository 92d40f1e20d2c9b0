"""The tenant index's analysis and mapping (see keyword_index's docstring for why
two analyses of the same text), and its replica settings.
"""

from __future__ import annotations

from typing import Any

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
        # the document's _id again, as doc values: a search reads its hits'
        # ids from doc values alone and loads no stored field (query_body's
        # `HIT_FIELDS`); never searched, so not indexed
        "chunk_id": {"type": "keyword", "index": False},
        "source_id": {"type": "keyword"},
        "version_id": {"type": "keyword"},
        "subjects": {"type": "keyword"},
        "media_type": {"type": "keyword"},
        "content_hash": {"type": "keyword"},
        "live": {"type": "boolean"},
        # "raw" | "summary"; documents written before the summary layer have none (raw)
        "layer": {"type": "keyword"},
        # "source" | "artifact"; documents written before the field have none (source)
        "document_type": {"type": "keyword"},
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


def replica_settings(replicas: int | None) -> dict[str, Any]:
    """`None`: auto-expanded 0-1 (see AUTO_REPLICAS); a number: exactly that many."""
    if replicas is None:
        return {"number_of_replicas": 0, "auto_expand_replicas": AUTO_REPLICAS}
    if replicas < 0:
        raise ValueError("replicas must be 0 or more")
    return {"number_of_replicas": replicas, "auto_expand_replicas": False}
