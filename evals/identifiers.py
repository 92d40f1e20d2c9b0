"""Identifier queries: a user names an identifier (IL-6, rs1800795, ERR-4021)
and expects the one document that contains it.

The golden set is drawn from a corpus itself: identifiers that mix letters
and digits and occur in exactly one document, asked as a user would. The
keyword leg finds such a document by construction, so it is the bar fusion
must not fall below (MRR@10 of hybrid + reranker = 1.000 is the goal).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from evals.beir import BeirDocument, load_corpus
from evals.golden import GoldenQuery

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9]")
TEMPLATES = (
    "What is reported about {}?",
    "{} findings",
    "studies of {}",
    "which paper mentions {}",
)


def is_strong_identifier(token: str) -> bool:
    """Letters and digits mixed, at least four characters: a bare number, a year
    or a hyphenated word is ordinary text (the reranker's rule too)."""
    return len(token) >= 4 and any(c.isalpha() for c in token) and any(c.isdigit() for c in token)


def identifier_golden_from(
    documents: Iterable[BeirDocument], count: int = 200, seed: int = 0
) -> list[GoldenQuery]:
    holders: dict[str, set[str]] = defaultdict(set)
    for document in documents:
        for token in _TOKEN.findall(f"{document.title} {document.text}"):
            if is_strong_identifier(token):
                holders[token.lower()].add(document.doc_id)
    unique = sorted(term for term, docs in holders.items() if len(docs) == 1)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(unique, min(count, len(unique))))
    return [
        GoldenQuery(
            f"id-{n}",
            TEMPLATES[n % len(TEMPLATES)].format(term),
            {next(iter(holders[term])): 1},
        )
        for n, term in enumerate(chosen)
    ]


def identifier_golden(folder: Path, count: int = 200, seed: int = 0) -> list[GoldenQuery]:
    """From a BEIR folder's corpus (document ids are the sources' filename stems)."""
    return identifier_golden_from(load_corpus(folder), count, seed)
