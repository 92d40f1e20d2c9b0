"""Query interpretation: what each leg should look for.

Stopwords come off the keyword query (never off the index: "to be or not to
be" stays findable when the whole query is stopwords). Identifier-shaped terms
(containing a digit or a hyphen, e.g. ERR-4021, Q3-2026) are kept whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A short English list: function words that carry no topic. Kept small on
# purpose; BM25's IDF already discounts frequent words.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)

_TOKEN = re.compile(r"\"[^\"]+\"|[\w][\w\-./]*[\w]|[\w]", re.UNICODE)


def is_identifier(term: str) -> bool:
    return any(c.isdigit() for c in term) or ("-" in term.strip("-"))


@dataclass(frozen=True, slots=True)
class InterpretedQuery:
    text: str
    keyword_text: str
    identifiers: tuple[str, ...]
    phrases: tuple[str, ...]


def interpret(query: str) -> InterpretedQuery:
    tokens = _TOKEN.findall(query)
    phrases = tuple(t.strip('"') for t in tokens if t.startswith('"'))
    words = [t for t in tokens if not t.startswith('"')]
    identifiers = tuple(dict.fromkeys(w for w in words if is_identifier(w)))
    kept = [w for w in words if w.lower() not in STOPWORDS or is_identifier(w)]
    keyword_terms = [*kept, *(f'"{p}"' for p in phrases)]
    keyword_text = " ".join(keyword_terms) if keyword_terms else query
    return InterpretedQuery(query, keyword_text, identifiers, phrases)


_QUOTED = re.compile(r'"([^"]+)"')
#: a query's phrases are bounded like the query itself
MAX_PHRASES = 8


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """What a keyword engine is asked: phrases that must appear as written
    (words together, in order) and the other words, which rank."""

    phrases: tuple[str, ...]
    words: str


def keyword_query(text: str) -> KeywordQuery:
    """Split a keyword query into its quoted phrases and the rest (a stray,
    unclosed quote is just a character). Every keyword adapter reads queries
    through this one rule."""
    phrases = tuple(p.strip() for p in _QUOTED.findall(text) if p.strip())[:MAX_PHRASES]
    rest = _QUOTED.sub(" ", text).replace('"', " ")
    return KeywordQuery(phrases, " ".join(rest.split()))
