"""The context budget's sentence fill (issue #36, groundedness): a hit that no
longer fits whole gives the budget's rest to its sentences that share the most
query terms, instead of being skipped."""

from __future__ import annotations

from groundwork.retrieval.context import context_terms, fitted_sentences, select_context
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from tests.fakes import HashingEmbedder
from tests.unit.test_kernel import STAFF, _engines

COUNT = HashingEmbedder().count_tokens
LONG = (
    "Trains leave the central station every hour. The ticket office opens at six. "
    "Night trains to the coast leave at 22:10 on Fridays. Bicycles travel free. "
    "Refunds are paid within seven days."
)


def test_the_best_sentences_fit_in_their_own_order() -> None:
    terms = context_terms("When do night trains to the coast leave?")
    assert {"night", "trains", "coast", "leave"} <= terms and "the" not in terms
    night = "Night trains to the coast leave at 22:10 on Fridays."
    hourly = "Trains leave the central station every hour."
    budget = COUNT(night) + COUNT(hourly)
    text, tokens = fitted_sentences(LONG, terms, budget, COUNT) or ("", 0)
    # the two that share the most terms, in the order the document has them
    assert text == f"{hourly} {night}"
    assert tokens == COUNT(text) <= budget
    only = fitted_sentences(LONG, terms, COUNT(night), COUNT)
    assert only is not None and only[0] == night
    assert fitted_sentences(LONG, terms, 2, COUNT) is None  # not even one sentence fits


def test_a_hit_too_long_for_the_rest_of_the_budget_is_cut_to_its_best_sentences() -> None:
    docs = [
        ("short:1", "Night trains: the schedule is printed at the station.", ("tenant:acme",)),
        ("long:1", LONG, ("tenant:acme",)),
    ]
    engines, _ = _engines(docs)
    query = "night trains coast"
    outcome = hybrid_search(STAFF, SearchRequest(query, limit=10), engines)
    assert isinstance(outcome, Found) and len(outcome.hits) == 2
    short, long = sorted(outcome.hits, key=lambda h: len(h.chunk.body))
    hits = [short, long]  # the short one first: the long one meets a nearly spent budget
    budget = COUNT(short.chunk.body) + 28
    assert COUNT(long.chunk.body) > 28

    plain = select_context(hits, budget, COUNT)
    assert [i.hit for i in plain.items] == [short] and plain.skipped_for_budget == 1

    filled = select_context(hits, budget, COUNT, query_terms=context_terms(query))
    assert [i.hit for i in filled.items] == hits  # in the order they were handed
    cut = filled.items[1]
    assert cut.trimmed and not cut.expanded and filled.skipped_for_budget == 0
    assert "Night trains to the coast leave at 22:10 on Fridays." in cut.chunks[0].body
    assert cut.chunks[0].body != LONG and cut.chunks[0].body in LONG
    assert filled.used_tokens == COUNT(short.chunk.body) + cut.tokens <= budget
    # the citation is still the whole chunk's
    assert cut.hit.citation.chunk_id == long.chunk.chunk_id
