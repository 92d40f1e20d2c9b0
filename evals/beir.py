"""BEIR-format folders: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class BeirDocument:
    doc_id: str
    title: str
    text: str

    def to_markdown(self) -> str:
        return f"# {self.title.strip() or self.doc_id}\n\n{self.text.strip()}\n"


def load_corpus(folder: Path, limit: int | None = None) -> Iterator[BeirDocument]:
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if limit is not None and n >= limit:
                return
            row = json.loads(line)
            yield BeirDocument(str(row["_id"]), row.get("title", ""), row.get("text", ""))


def load_queries(folder: Path) -> dict[str, str]:
    with open(folder / "queries.jsonl", encoding="utf-8") as handle:
        return {str(row["_id"]): row["text"] for row in map(json.loads, handle)}


def load_qrels(folder: Path, split: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader)
        if header and header[0] != "query-id":  # no header line
            qrels.setdefault(header[0], {})[header[1]] = int(header[2])
        for query_id, doc_id, score in reader:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels
