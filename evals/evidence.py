"""Gold evidence for groundedness: SciFact claims with sentence-level
evidence (scifact/sentences) and SQuAD questions with answer spans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.beir import BeirDocument


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    query: str
    doc_id: str
    evidence: tuple[str, ...]  # any one of these inside the context counts as grounded


def scifact_evidence(sentences_dir: Path, doc_ids: set[str] | None = None) -> list[EvidenceItem]:
    """Claims whose evidence sentences are known, one item per (claim, document)."""
    abstracts: dict[str, list[str]] = {}
    with open(sentences_dir / "corpus.jsonl", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            abstracts[str(row["doc_id"])] = row["abstract"]
    items: list[EvidenceItem] = []
    with open(sentences_dir / "claims_train.jsonl", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            for doc_id, sets in (row.get("evidence") or {}).items():
                if doc_ids is not None and doc_id not in doc_ids:
                    continue
                sentences = abstracts.get(doc_id, [])
                evidence = tuple(
                    sentences[i].strip()
                    for group in sets
                    for i in group["sentences"]
                    if i < len(sentences)
                )
                if evidence:
                    items.append(EvidenceItem(row["claim"], doc_id, evidence))
    return items


def squad_corpus(path: Path, max_paragraphs: int | None = None) -> Iterator[BeirDocument]:
    """SQuAD paragraphs as documents: id `<article>-<paragraph>`, titled by article."""
    for doc_id, title, context, _ in _squad_paragraphs(path, max_paragraphs):
        yield BeirDocument(doc_id, title.replace("_", " "), context)


def squad_evidence(path: Path, max_paragraphs: int | None = None) -> list[EvidenceItem]:
    items: list[EvidenceItem] = []
    for doc_id, _, _, qas in _squad_paragraphs(path, max_paragraphs):
        for qa in qas:
            answers = tuple(dict.fromkeys(a["text"].strip() for a in qa["answers"]))
            if answers:
                items.append(EvidenceItem(qa["question"], doc_id, answers))
    return items


def _squad_paragraphs(
    path: Path, max_paragraphs: int | None
) -> Iterator[tuple[str, str, str, list[dict[str, Any]]]]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    count = 0
    for a, article in enumerate(data):
        for p, paragraph in enumerate(article["paragraphs"]):
            if max_paragraphs is not None and count >= max_paragraphs:
                return
            count += 1
            yield f"{a}-{p}", article["title"], paragraph["context"], paragraph["qas"]


def write_squad_as_beir(path: Path, out: Path, max_paragraphs: int | None = None) -> Path:
    """SQuAD as a BEIR folder (split `dev`): each question judged against its
    paragraph, so relevance and groundedness run over the same tenant."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus:
        for doc in squad_corpus(path, max_paragraphs):
            corpus.write(
                json.dumps({"_id": doc.doc_id, "title": doc.title, "text": doc.text}) + "\n"
            )
    with (
        open(out / "queries.jsonl", "w", encoding="utf-8") as queries,
        open(out / "qrels" / "dev.tsv", "w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for n, item in enumerate(squad_evidence(path, max_paragraphs)):
            queries.write(json.dumps({"_id": f"q{n}", "text": item.query}) + "\n")
            qrels.write(f"q{n}\t{item.doc_id}\t1\n")
    return out
