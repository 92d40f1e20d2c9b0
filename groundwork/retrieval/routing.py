"""Which layer answers a query: the documents' own passages (raw hybrid +
reranker), or the summary layer first (summary_first, layers.py).

Summary-first ranks sources by their compiled summary pages before their
passages. That is the read for a question about a document as a whole or a
topic broadly; for a specific claim or a factoid question it loses (SciFact
held-out nDCG@10 0.721 against 0.734, the demo golden sets -0.100: issue #36),
because a summary page holds a document's lead sentences, not the passage that
answers. So the router sends a query to summary_first only when its wording
says it asks for the broad view, and says why; everything else, identifier
lookups first, goes to the raw layer.

Deterministic and explainable on purpose: a handful of phrases and one count
of content words (stopwords off, as the keyword leg reads the query), no
model. The rules were chosen on tuning queries only (SciFact train's even
query ids, SQuAD's even articles; bench/summary_routing.py --part tune): none
of those is a broad question, so the rules were narrowed until they sent
(nearly) none of them to the summary layer; a lone adverb ("broadly", "in
general") and "what is <x> about" inside a longer question had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from groundwork.retrieval.query import interpret

RoutedLayer = Literal["raw", "summary_first"]

#: the reasons a route is taken, as the API reports them
OVERVIEW = "overview wording"
WHOLE_DOCUMENT = "names documents as a whole"
TOPIC = "a topic in few words"
LOOKUP = "an identifier lookup"
SPECIFIC = "a specific question or claim"
ROUTE_REASONS = (OVERVIEW, WHOLE_DOCUMENT, TOPIC, LOOKUP, SPECIFIC)

# Asking for the broad view: a summary, the main points, what a thing is about.
# An adverb alone ("broadly", "in general") is not: inside a question it
# qualifies a specific answer ("what is typically used to broadly define ...").
_OVERVIEW = re.compile(
    r"\b(overview|summary|summaries|summari[sz]e|summari[sz]ing|synopsis|gist"
    r"|high[- ]level (view|picture|description)|at a glance|introduction to"
    r"|(main|key|major|central) (points?|ideas?|topics?|themes?|findings|takeaways"
    r"|messages?|conclusions?) (of|in|from|on|about)"
    r"|tell me about|what do (we|you) know about|what is known about)\b"
    # "what is the travel policy about?": the question ends there
    r"|^\s*what (is|are|was|were) ([\w'-]+ ){1,5}about\s*\??\s*$",
    re.IGNORECASE,
)
# A query that asks for documents, not for a passage in one.
_DOCUMENT_NOUNS = (
    r"(documents?|files?|papers?|reports?|articles?|pages?|policies|studies|guides?"
    r"|manuals?|sources?|docs|notes|memos?)"
)
_WHOLE_DOCUMENT = re.compile(
    rf"\b((which|what|any|all|list|find|show( me)?)( the| of the| our)? {_DOCUMENT_NOUNS}"
    rf"( (are|is|that|which))? (about|on|covering|cover|discuss(es|ing)?|describ(e|es|ing)"
    rf"|deal(s|ing)? with|concern(s|ing)?|related to|regarding))\b",
    re.IGNORECASE,
)
# A question or a sentence, however short: a question word or mark anywhere, or
# a verb among the function words ("Telnet was sold to", "combs are called what").
_NOT_A_TOPIC = re.compile(
    r"\?|\b(who|whom|whose|when|where|which|what|how|why|is|are|was|were|be|been"
    r"|do|does|did|has|have|had|can|could|should|will|would)\b",
    re.IGNORECASE,
)
#: at most this many content words, with no question or verb and no code, is a
#: topic ("night trains", "vitamin D") rather than a question
TOPIC_WORDS = 2


@dataclass(frozen=True, slots=True)
class Route:
    """The layer that answers a query, and the rule that chose it."""

    layer: RoutedLayer
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"layer": self.layer, "reason": self.reason}


def route_query(query: str) -> Route:
    """summary_first for overview wording, a query for documents as a whole or
    a bare topic; raw for everything else (identifier lookups always)."""
    interpreted = interpret(query)
    if interpreted.is_lookup:
        # a code is found by the keyword leg's exact clause, in the passage that names it
        return Route("raw", LOOKUP)
    if _OVERVIEW.search(query):
        return Route("summary_first", OVERVIEW)
    if _WHOLE_DOCUMENT.search(query):
        return Route("summary_first", WHOLE_DOCUMENT)
    if (
        not interpreted.codes
        and 0 < interpreted.other_words <= TOPIC_WORDS
        and not _NOT_A_TOPIC.search(query)
    ):
        return Route("summary_first", TOPIC)
    return Route("raw", SPECIFIC)
