"""Converters into the golden-set format: a BEIR folder (with SciFact-layout
sentence evidence when present) and a SQuAD v1.1 file.

Sentence evidence is found by pattern: every `claims_*.jsonl` beside the
sentence-split `corpus.jsonl` (SciFact ships `claims_train.jsonl` and
`claims_dev.jsonl`, the dev claims being BEIR's test split); a claim's
evidence attaches to the BEIR query with the same id and text, or else the
same text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evals.beir import BeirDocument, load_corpus, load_qrels, load_queries
from evals.golden import GoldenQuery

CLAIMS_PATTERN = "claims_*.jsonl"


def sentence_evidence(sentences_dir: Path) -> dict[str, tuple[str, dict[str, tuple[str, ...]]]]:
    """claim id -> (claim, {document: evidence sentences}), from every claims file
    with labelled evidence (an unlabelled file contributes nothing)."""
    abstracts: dict[str, list[str]] = {}
    with open(sentences_dir / "corpus.jsonl", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            abstracts[str(row["doc_id"])] = row["abstract"]
    claims: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {}
    for path in sorted(sentences_dir.glob(CLAIMS_PATTERN)):
        with open(path, encoding="utf-8") as handle:
            for row in map(json.loads, handle):
                by_doc: dict[str, tuple[str, ...]] = {}
                for doc_id, sets in (row.get("evidence") or {}).items():
                    sentences = abstracts.get(str(doc_id), [])
                    evidence = tuple(
                        sentences[i].strip()
                        for group in sets
                        for i in group["sentences"]
                        if i < len(sentences)
                    )
                    if evidence:
                        by_doc[str(doc_id)] = evidence
                if by_doc:
                    claims[str(row["id"])] = (row["claim"], by_doc)
    return claims


def beir_golden(
    folder: Path,
    split: str,
    sentences_dir: Path | None = None,
    limit_docs: int | None = None,
) -> list[GoldenQuery]:
    """Every judged query of the split, in qrels order, graded as judged; the
    documents the tenant holds (the folder's first `limit_docs`) are the
    expected passages, and, with a subset, a query none of whose judged
    documents is held is left out. Evidence is kept for held documents only."""
    documents = {d.doc_id: f"{d.title}\n\n{d.text}" for d in load_corpus(folder, limit=limit_docs)}
    queries = load_queries(folder)
    qrels = load_qrels(folder, split)
    claims = sentence_evidence(sentences_dir) if sentences_dir is not None else {}
    by_text = {claim: (claim, evidence) for claim, evidence in claims.values()}
    golden: list[GoldenQuery] = []
    for query_id, judged in qrels.items():
        if query_id not in queries or not any(judged.values()):
            continue
        if limit_docs is not None and not set(judged) & set(documents):
            continue
        evidence: tuple[tuple[str, tuple[str, ...]], ...] = ()
        claim = claims.get(query_id)
        if claim is None or claim[0] != queries[query_id]:
            claim = by_text.get(queries[query_id])  # the same claim under another id
        if claim is not None:
            evidence = tuple((d, spans) for d, spans in claim[1].items() if d in documents)
        golden.append(
            GoldenQuery(
                query_id=query_id,
                query=queries[query_id],
                sources=dict(judged),
                evidence=evidence,
                passages=tuple((d, documents[d]) for d in judged if d in documents),
            )
        )
    return golden


def squad_corpus(path: Path, max_paragraphs: int | None = None) -> Iterator[BeirDocument]:
    """SQuAD paragraphs as documents: id `<article>-<paragraph>`, titled by article."""
    for doc_id, title, context, _ in _squad_paragraphs(path, max_paragraphs):
        yield BeirDocument(doc_id, title.replace("_", " "), context)


def squad_golden(path: Path, max_paragraphs: int | None = None) -> list[GoldenQuery]:
    """Each answerable question judged against its paragraph, its answers as spans."""
    golden: list[GoldenQuery] = []
    for doc_id, title, context, qas in _squad_paragraphs(path, max_paragraphs):
        for qa in qas:
            answers = tuple(dict.fromkeys(a["text"].strip() for a in qa["answers"]))
            if answers:
                golden.append(
                    GoldenQuery(
                        query_id=f"q{len(golden)}",
                        query=qa["question"],
                        sources={doc_id: 1},
                        evidence=((doc_id, answers),),
                        passages=((doc_id, f"{title.replace('_', ' ')}\n\n{context}"),),
                        reference_answer=answers[0],
                    )
                )
    return golden


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


def write_squad_corpus(path: Path, out: Path, max_paragraphs: int | None = None) -> Path:
    """SQuAD's paragraphs as a BEIR corpus.jsonl (what ingestion reads)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus:
        for doc in squad_corpus(path, max_paragraphs):
            corpus.write(
                json.dumps({"_id": doc.doc_id, "title": doc.title, "text": doc.text}) + "\n"
            )
    return out
