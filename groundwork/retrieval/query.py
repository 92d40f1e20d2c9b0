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
    """Kept whole by interpretation (never taken for a stopword)."""
    return any(c.isdigit() for c in term) or ("-" in term.strip("-"))


#: the longest code (ERR-4021 is 8 characters; an accession or DOI-like name 30)
MAX_CODE_CHARS = 64


def is_code(term: str) -> bool:
    """An identifier a user names to find the documents that contain it: a
    letter first, a digit somewhere (ERR-4021, Q3-2026, IL-6, rs1800795, METTL3).
    A bare number or year ("Super Bowl 50", "2015"), a hyphenated word, and a
    quantity or ordinal that starts with its number ("50th", "30-second",
    "5-year") are ordinary text. The one detector of codes: the keyword leg's
    exact clause and the reranker's lift both read it. Longer than MAX_CODE_CHARS
    it is not a name anyone types (and would exceed OpenSearch's regexp bound)."""
    return len(term) <= MAX_CODE_CHARS and term[:1].isalpha() and any(c.isdigit() for c in term)


def code_pattern(code: str) -> str:
    """A code as written in text, as a regular expression that Python's `re`
    and PostgreSQL's (ARE) read alike; matching is case-insensitive (the
    caller's flag). Not preceded by a word character or a hyphen, and followed
    by anything but an ASCII letter, digit, _ or -: Kir5.1 and the deletion
    pat1Δ name Kir5 and pat1, while pat12 and ERR-4021-B are other codes. The
    reranker's lift and the keyword adapters without an identifier analysis
    read this one rule."""
    return rf"(?<![\w-]){re.escape(code)}(?![A-Za-z0-9_-])"


#: a query with a code and at most this many other content words is a lookup
#: of that code ("IL-6 findings", "which paper mentions METTL3"); a longer one
#: (a claim, a question) merely contains it
LOOKUP_OTHER_WORDS = 2


@dataclass(frozen=True, slots=True)
class InterpretedQuery:
    text: str
    keyword_text: str
    identifiers: tuple[str, ...]
    phrases: tuple[str, ...]
    #: content words (stopwords off, phrases excluded) that are not codes
    other_words: int = 0

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(t for t in self.identifiers if is_code(t))

    @property
    def is_lookup(self) -> bool:
        """The user names a code and little else: they want what contains it."""
        return bool(self.codes) and self.other_words <= LOOKUP_OTHER_WORDS


def interpret(query: str) -> InterpretedQuery:
    tokens = _TOKEN.findall(query)
    phrases = tuple(t.strip('"') for t in tokens if t.startswith('"'))
    words = [t for t in tokens if not t.startswith('"')]
    identifiers = tuple(dict.fromkeys(w for w in words if is_identifier(w)))
    kept = [w for w in words if w.lower() not in STOPWORDS or is_identifier(w)]
    keyword_terms = [*kept, *(f'"{p}"' for p in phrases)]
    keyword_text = " ".join(keyword_terms) if keyword_terms else query
    other = sum(1 for w in kept if not is_code(w)) + sum(len(p.split()) for p in phrases)
    return InterpretedQuery(query, keyword_text, identifiers, phrases, other)


_QUOTED = re.compile(r'"([^"]+)"')
#: a query's phrases are bounded like the query itself
MAX_PHRASES = 8


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """What a keyword engine is asked: phrases that must appear as written
    (words together, in order) and the other words, which rank."""

    phrases: tuple[str, ...]
    words: str
    #: codes among the words (see is_code): each must count for more than the
    #: words around it, which an index's text analysis may split it into
    codes: tuple[str, ...] = ()


#: a query's codes are bounded like its phrases
MAX_CODES = 8


def keyword_query(text: str) -> KeywordQuery:
    """Split a keyword query into its quoted phrases and the rest (a stray,
    unclosed quote is just a character). Every keyword adapter reads queries
    through this one rule."""
    phrases = tuple(p.strip() for p in _QUOTED.findall(text) if p.strip())[:MAX_PHRASES]
    rest = " ".join(_QUOTED.sub(" ", text).replace('"', " ").split())
    codes = tuple(dict.fromkeys(t for t in _TOKEN.findall(rest) if is_code(t)))[:MAX_CODES]
    return KeywordQuery(phrases, rest, codes)
