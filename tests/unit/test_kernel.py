"""The retrieval kernel against in-memory fakes that pass the port conformance suites."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import pytest

from groundwork.documents import Location
from groundwork.errors import EngineUnavailable, StoreError
from groundwork.ports import AccessScope
from groundwork.retrieval.context import select_context
from groundwork.retrieval.kernel import (
    RetrievalPolicy,
    SearchEngines,
    SearchMode,
    SearchRequest,
    hybrid_search,
    overlap_limit,
)
from groundwork.retrieval.outcome import ChunkView, Found
from groundwork.retrieval.query import InterpretedQuery, interpret
from groundwork.retrieval.rerank import IdentifierReranker, RerankCandidate
from tests.fakes import (
    FAKE_MODEL,
    HashingEmbedder,
    InMemoryChunkReader,
    InMemoryVectorIndex,
)
from tests.unit.in_memory_corpus import CorpusChunk, index_in_memory

TENANT = "acme"
STAFF = AccessScope(TENANT, ("tenant:acme",))


def _engines(
    docs: Sequence[tuple[str, str, tuple[str, ...]]],
    policy: RetrievalPolicy | None = None,
    low_confidence: Sequence[str] = (),
    heading: dict[str, tuple[str, ...]] | None = None,
) -> tuple[SearchEngines, InMemoryChunkReader]:
    """docs: (chunk id, text, subjects); the source is the chunk id's prefix before ':'."""
    corpus = index_in_memory(
        TENANT,
        (
            CorpusChunk(
                chunk_id,
                text,
                subjects,
                heading_path=(heading or {}).get(chunk_id),
                low_confidence=chunk_id in low_confidence,
            )
            for chunk_id, text, subjects in docs
        ),
    )
    return corpus.engines(policy), corpus.reader


CORPUS = [
    (
        "runbook:1",
        "ERR-4021 means the storage quota is exceeded; free space or raise the quota.",
        ("tenant:acme",),
    ),
    (
        "runbook:2",
        "Replica lag alerts fire when a read replica falls behind the primary.",
        ("tenant:acme",),
    ),
    ("handbook:1", "Employees receive 25 vacation days per calendar year.", ("tenant:acme",)),
    ("budget:1", "The hiring budget for 2027 is 3.4M.", ("group:finance",)),
]


def test_found_hits_carry_citations_and_leg_ranks() -> None:
    engines, _ = _engines(CORPUS)
    outcome = hybrid_search(
        STAFF, SearchRequest("how many vacation days do employees get"), engines
    )
    assert isinstance(outcome, Found)
    top = outcome.hits[0]
    assert top.chunk.chunk_id == "handbook:1" and set(top.leg_ranks) == {"vector", "keyword"}
    assert top.citation.chunk_id == "handbook:1" and top.citation.source_version_id == "v1"


def test_nothing_accessible_without_subjects_or_without_visible_sources() -> None:
    engines, _ = _engines(CORPUS)
    assert (
        hybrid_search(AccessScope(TENANT, ()), SearchRequest("quota"), engines).kind
        == "nothing_accessible"
    )
    assert (
        hybrid_search(AccessScope(TENANT, ("group:nobody",)), SearchRequest("quota"), engines).kind
        == "nothing_accessible"
    )
    assert (
        hybrid_search(AccessScope("other", ("tenant:acme",)), SearchRequest("quota"), engines).kind
        == "nothing_accessible"
    )


def test_nothing_matches_when_no_leg_finds_anything() -> None:
    engines, _ = _engines(CORPUS)
    outcome = hybrid_search(
        STAFF, SearchRequest("zeppelin xylophone", mode=SearchMode.KEYWORD), engines
    )
    assert outcome.kind == "nothing_matches" and not hasattr(outcome, "hits")


def test_nothing_close_enough_below_the_semantic_floor() -> None:
    engines, _ = _engines(CORPUS)
    strict = dataclasses.replace(engines, vectors=_with_floor(engines.vectors, 0.99))
    outcome = hybrid_search(STAFF, SearchRequest("zeppelin xylophone"), strict)
    assert outcome.kind == "nothing_close_enough"


def _with_floor(index: InMemoryVectorIndex, floor: float) -> InMemoryVectorIndex:  # type: ignore[valid-type]
    index._model = dataclasses.replace(FAKE_MODEL, semantic_floor=floor)
    return index


def test_hidden_content_is_never_returned_nor_counted() -> None:
    engines, _ = _engines(CORPUS)
    staff = hybrid_search(STAFF, SearchRequest("hiring budget 2027", limit=10), engines)
    assert isinstance(staff, Found) and all(h.chunk.source_id != "budget" for h in staff.hits)
    finance = hybrid_search(
        AccessScope(TENANT, ("tenant:acme", "group:finance")),
        SearchRequest("hiring budget 2027"),
        engines,
    )
    assert isinstance(finance, Found) and finance.hits[0].chunk.source_id == "budget"


def test_result_time_recheck_drops_a_source_deleted_after_indexing() -> None:
    engines, reader = _engines(CORPUS)
    reader.deleted.add("handbook")
    outcome = hybrid_search(STAFF, SearchRequest("vacation days"), engines)
    assert not isinstance(outcome, Found) or all(
        h.chunk.source_id != "handbook" for h in outcome.hits
    )


def test_relative_floor_drops_weak_tail_hits() -> None:
    engines, _ = _engines(CORPUS, policy=RetrievalPolicy(relative_floor=0.99))
    outcome = hybrid_search(STAFF, SearchRequest("replica lag primary", limit=10), engines)
    assert isinstance(outcome, Found) and [h.chunk.chunk_id for h in outcome.hits] == ["runbook:2"]
    loose = hybrid_search(
        STAFF, SearchRequest("replica lag primary", limit=10), _engines(CORPUS)[0]
    )
    assert isinstance(loose, Found) and len(loose.hits) > 1


def test_identifier_reranker_promotes_exact_identifiers_and_is_switchable() -> None:
    docs = [
        (
            "a:1",
            "storage service error storage service error storage service error",
            ("tenant:acme",),
        ),
        ("b:1", "ERR-4021 quota.", ("tenant:acme",)),
    ]
    engines, _ = _engines(
        docs, policy=RetrievalPolicy(leg_weights=(("vector", 1.0), ("keyword", 0.0)))
    )
    request = SearchRequest("storage service error ERR-4021", limit=2)
    reranked = hybrid_search(STAFF, request, engines)
    plain = hybrid_search(STAFF, dataclasses.replace(request, rerank=False), engines)
    assert isinstance(reranked, Found) and isinstance(plain, Found)
    assert reranked.hits[0].chunk.chunk_id == "b:1"
    assert plain.hits[0].chunk.chunk_id == "a:1"


def test_a_reranker_that_returns_nothing_falls_back_to_fusion_order() -> None:
    class Silent:
        def reorders(self, query: InterpretedQuery) -> bool:
            return True

        def rerank(
            self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
        ) -> list[str]:
            return []

    engines, _ = _engines(CORPUS)
    silent = dataclasses.replace(engines, reranker=Silent())
    request = SearchRequest("replica lag", limit=4)
    a, b = (
        hybrid_search(STAFF, request, silent),
        hybrid_search(STAFF, dataclasses.replace(request, rerank=False), engines),
    )
    assert isinstance(a, Found) and isinstance(b, Found)
    assert [h.chunk.chunk_id for h in a.hits] == [h.chunk.chunk_id for h in b.hits]


def test_a_reranker_is_handed_each_legs_own_scores() -> None:
    """The learned reranker reads the legs' cosine and BM25 scores: the kernel
    hands a reranker each candidate's score in every leg that returned it, the
    same numbers the legs ranked by."""
    seen: list[RerankCandidate] = []

    class Watching:
        def reorders(self, query: InterpretedQuery) -> bool:
            return True

        def rerank(
            self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
        ) -> list[str]:
            seen.extend(candidates)
            return []

    engines, _ = _engines(CORPUS)
    request = SearchRequest("replica lag", limit=4)
    found = hybrid_search(STAFF, request, dataclasses.replace(engines, reranker=Watching()))
    assert isinstance(found, Found) and seen
    for c in seen:
        scores = dict(c.leg_scores)
        assert set(scores) == {leg for leg, _ in c.leg_ranks}, c
        assert all(isinstance(v, float) for v in scores.values())
    assert any(dict(c.leg_scores).get("keyword", 0.0) > 0 for c in seen)


def test_a_remote_reranker_that_fails_degrades_to_the_local_one_and_says_so() -> None:
    class Down:
        def reorders(self, query: InterpretedQuery) -> bool:
            return True

        def rerank(
            self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
        ) -> list[str]:
            raise EngineUnavailable("the reranker at http://ranker/rerank did not answer")

    docs = [
        ("a:1", "storage service error " * 3, ("tenant:acme",)),
        ("b:1", "ERR-4021 quota.", ("tenant:acme",)),
    ]
    engines, _ = _engines(
        docs, policy=RetrievalPolicy(leg_weights=(("vector", 1.0), ("keyword", 0.0)))
    )
    request = SearchRequest("storage service error ERR-4021", limit=2)
    local = hybrid_search(STAFF, request, engines)
    remote_down = dataclasses.replace(
        engines, reranker=Down(), fallback_reranker=IdentifierReranker()
    )
    degraded = hybrid_search(STAFF, request, remote_down)
    assert isinstance(local, Found) and isinstance(degraded, Found)
    # the answer is the local ranking's, whole, and the outcome names what happened
    assert [h.chunk.chunk_id for h in degraded.hits] == [h.chunk.chunk_id for h in local.hits]
    assert degraded.hits[0].chunk.chunk_id == "b:1"
    assert local.degraded == ()
    assert len(degraded.degraded) == 1 and "did not answer" in degraded.degraded[0]
    assert "ranked locally" in degraded.degraded[0]


def test_low_confidence_chunks_are_demoted_and_flagged() -> None:
    docs = [
        ("scan:1", "replica lag primary", ("tenant:acme",)),
        ("typed:1", "replica lag primary", ("tenant:acme",)),
    ]
    engines, _ = _engines(
        docs, policy=RetrievalPolicy(low_confidence_weight=0.5), low_confidence=["scan:1"]
    )
    outcome = hybrid_search(STAFF, SearchRequest("replica lag primary"), engines)
    assert isinstance(outcome, Found)
    assert [h.chunk.chunk_id for h in outcome.hits] == ["typed:1", "scan:1"]
    assert outcome.hits[1].citation.low_confidence


def test_context_budget_caps_dedupes_and_expands_sections() -> None:
    docs = [
        ("guide:1", "Vacation days are 25 per year for employees.", ("tenant:acme",)),
        ("guide:2", "Vacation days carry over up to five days.", ("tenant:acme",)),
        ("guide:3", "Vacation days expire in March for employees.", ("tenant:acme",)),
        ("guide:4", "Vacation requests need two weeks notice.", ("tenant:acme",)),
        ("copy:1", "Vacation days are 25 per year for employees.", ("tenant:acme",)),
        ("other:1", "Sick leave is not capped.", ("tenant:acme",)),
    ]
    sections = {
        "guide:1": ("Guide", "Vacation"),
        "guide:2": ("Guide", "Vacation"),
        "guide:3": ("Guide", "Other"),
        "guide:4": ("Guide", "Other"),
    }
    engines, reader = _engines(docs, heading=sections)
    outcome = hybrid_search(STAFF, SearchRequest("vacation days employees", limit=10), engines)
    assert isinstance(outcome, Found)
    count = HashingEmbedder().count_tokens
    capped = select_context(
        outcome.hits, budget_tokens=10_000, count_tokens=count, per_source_cap=2
    )
    assert sum(1 for i in capped.items if i.hit.chunk.source_id == "guide") == 2
    assert capped.skipped_as_duplicate == 1 and capped.skipped_for_source_cap >= 1
    tight = select_context(outcome.hits, budget_tokens=30, count_tokens=count)
    assert tight.used_tokens <= 30 and tight.skipped_for_budget > 0
    in_a_section = next(h for h in outcome.hits if h.chunk.chunk_id in sections)
    expanded = select_context(
        [in_a_section],
        budget_tokens=10_000,
        count_tokens=count,
        load_section=lambda view: reader.section(STAFF, view.chunk_id),
    )
    item = expanded.items[0]
    top = item.hit.chunk
    same_section = {c for c, path in sections.items() if path == top.heading_path}
    assert item.expanded and {c.chunk_id for c in item.chunks} == same_section


@pytest.mark.parametrize("limit", [1, 3])
def test_limit_is_respected(limit: int) -> None:
    engines, _ = _engines(CORPUS)
    outcome = hybrid_search(
        STAFF, SearchRequest("the storage quota replica vacation", limit=limit), engines
    )
    assert isinstance(outcome, Found) and len(outcome.hits) == limit


def test_pinned_sources_come_first_and_stay_scoped() -> None:
    engines, _ = _engines(CORPUS)
    request = SearchRequest(
        "vacation days replica lag", limit=4, pinned_source_ids=("runbook", "budget")
    )
    outcome = hybrid_search(STAFF, request, engines)
    assert isinstance(outcome, Found)
    sources = [h.chunk.source_id for h in outcome.hits]
    assert sources[0] == "runbook" and "budget" not in sources  # pinning never widens access


def test_stopwords_alone_match_nothing_in_the_keyword_leg() -> None:
    engines, _ = _engines(CORPUS)
    outcome = hybrid_search(
        STAFF, SearchRequest("what is the zeppelin", mode=SearchMode.KEYWORD), engines
    )
    assert (
        outcome.kind == "nothing_matches"
    )  # "is" and "the" occur in the corpus, "zeppelin" does not


def test_the_reranker_lifts_only_identifiers_that_mix_letters_and_digits() -> None:
    from groundwork.retrieval.query import interpret

    candidates = [
        RerankCandidate("a", "The game was played in February."),
        RerankCandidate("b", "Some filler text about the league."),
        RerankCandidate("c", "Super Bowl 50 and error ERR-4021 were both discussed."),
    ]
    reranker = IdentifierReranker()
    assert reranker.rerank(interpret("Who won Super Bowl 50 in 2015?"), candidates) == [
        "a",
        "b",
        "c",
    ]
    assert reranker.rerank(interpret("what is ERR-4021"), candidates)[0] == "c"


class _KeywordEngineDown:
    """A keyword index whose engine is unreachable (or refuses: circuit breaker)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def search(self, *args: object, **kwargs: object) -> list[object]:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [EngineUnavailable("OpenSearch unavailable"), StoreError("OpenSearch refused: breaker")],
)
def test_a_hybrid_search_answers_from_the_vector_leg_when_the_keyword_engine_fails(
    error: Exception,
) -> None:
    """One engine's trouble (seen at 8 clients: the keyword node's circuit
    breaker) made the whole hybrid search a 500; it answers from the vector
    leg and says which leg is missing. A keyword-only search has nothing else
    to answer with: the error stands."""
    engines, _ = _engines([("a:1", "quota policy for storage", ("tenant:acme",))])
    down = dataclasses.replace(engines, keywords=_KeywordEngineDown(error))  # type: ignore[arg-type]
    outcome = hybrid_search(STAFF, SearchRequest("storage quota policy"), down)
    assert isinstance(outcome, Found)
    assert [h.chunk.chunk_id for h in outcome.hits] == ["a:1"]
    assert outcome.missing_legs == ("keyword",)
    whole = hybrid_search(STAFF, SearchRequest("storage quota policy"), engines)
    assert isinstance(whole, Found) and whole.missing_legs == ()
    with pytest.raises(type(error)):
        hybrid_search(STAFF, SearchRequest("quota", mode=SearchMode.KEYWORD), down)


def _view(chunk_id: str, body: str, heading_path: tuple[str, ...] = ()) -> ChunkView:
    return ChunkView(
        chunk_id,
        chunk_id,
        "v1",
        chunk_id,
        f"{chunk_id}.md",
        "text/markdown",
        heading_path,
        body,
        Location(line_start=1),
        "h",
        False,
    )


def test_a_lookup_of_an_identifier_puts_the_chunks_that_name_it_first() -> None:
    """Issue 20: "studies of c45" and "which paper mentions hdac-1" had the one
    document naming the identifier at fused rank 4; the bounded lift (three
    places, kept for long claims) left it at rank 2. A query that is little more
    than the identifier is a lookup: every chunk naming it goes first."""
    from groundwork.retrieval.fusion import FusedCandidate
    from groundwork.retrieval.kernel import reranked_order
    from groundwork.retrieval.query import interpret

    views = [_view(f"c{n}", f"Histone deacetylases in study {n}.") for n in range(5)]
    views.append(_view("hit", "Repression by BTEB3 needs HDAC-1 and Sp1."))
    scored = [(1.0 - n / 10, FusedCandidate(v.chunk_id, 0.0, {}), v) for n, v in enumerate(views)]
    order = reranked_order(IdentifierReranker(), interpret("which paper mentions hdac-1"), scored)
    assert order[0] == "hit"
    # a long claim that merely contains an identifier keeps the bounded lift
    claim = interpret("histone deacetylase study shows hdac-1 represses many promoters in mice")
    assert reranked_order(IdentifierReranker(), claim, scored)[0] != "hit"


def test_the_reranker_sees_the_heading_path_the_keyword_leg_indexed() -> None:
    """Issue 20: alphaPS2betaPS and ell028 live in SciFact titles, which are the
    chunks' heading path: the keyword leg found them (it indexes heading path and
    body), the reranker read the body alone and lifted nothing."""
    from groundwork.retrieval.fusion import FusedCandidate
    from groundwork.retrieval.kernel import reranked_order
    from groundwork.retrieval.query import interpret

    other = _view("other", "Integrin ligands in wing morphogenesis.")
    titled = _view(
        "titled",
        "Tenectin's function in looping morphogenesis.",
        ("Tenectin is a novel alphaPS2betaPS integrin ligand",),
    )
    scored = [
        (1.0, FusedCandidate("other", 0.0, {}), other),
        (0.9, FusedCandidate("titled", 0.0, {}), titled),
    ]
    order = reranked_order(IdentifierReranker(), interpret("alphaPS2betaPS findings"), scored)
    assert order == ["titled", "other"]


class _ThreadNoting:
    """Wraps a fake index: notes the thread each search ran on, and holds the
    first `hold` searches until released (searches in flight at once)."""

    def __init__(self, inner: object, hold: int = 0) -> None:
        self.inner = inner
        self.threads: list[str] = []
        self.hold = hold
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def search(self, *args: object, **kwargs: object) -> object:
        with self._lock:
            self.threads.append(threading.current_thread().name)
            held = self.hold > 0
            self.hold -= 1
        if held:
            self.entered.release()
            assert self.release.wait(10)
        return self.inner.search(*args, **kwargs)  # type: ignore[attr-defined]


def test_the_legs_overlap_only_while_the_cores_have_room() -> None:
    """Alone, the keyword leg runs on its own thread while this one embeds and
    waits on the vector leg (lower latency). With as many searches in flight as
    the process has cores, it runs on the caller's thread: the hand-off cost
    0.4 ms of the API's ~3.4 ms of CPU per search at 8 clients and saves no
    time when every core is busy."""
    engines, _ = _engines(CORPUS)
    keywords = _ThreadNoting(engines.keywords)
    busy = _ThreadNoting(engines.vectors, hold=overlap_limit())
    engines = dataclasses.replace(engines, keywords=keywords, vectors=busy)  # type: ignore[arg-type]
    request = SearchRequest("vacation days")

    lone = hybrid_search(STAFF, request, dataclasses.replace(engines, vectors=busy.inner))  # type: ignore[arg-type]
    assert isinstance(lone, Found) and keywords.threads[-1].startswith("keyword-leg")

    holders = [
        threading.Thread(target=hybrid_search, args=(STAFF, request, engines), name=f"held-{i}")
        for i in range(overlap_limit())
    ]
    for holder in holders:
        holder.start()
    for _ in holders:
        assert busy.entered.acquire(timeout=10)  # every core's worth of searches in flight
    keywords.threads.clear()
    crowded = hybrid_search(STAFF, request, engines)
    busy.release.set()
    for holder in holders:
        holder.join(10)
    assert (
        isinstance(crowded, Found) and crowded.hits[0].chunk.chunk_id == lone.hits[0].chunk.chunk_id
    )
    assert threading.current_thread().name in keywords.threads


def test_a_reranker_that_keeps_fusion_order_is_not_handed_candidates() -> None:
    """Issue #33: the identifier reranker reorders only a query naming a code;
    for any other the search built every candidate's text and leg scores
    (0.15 ms of the API's CPU per search) for an answer that was fusion's."""
    handed: list[str] = []

    class Watching(IdentifierReranker):
        def rerank(
            self, query: InterpretedQuery, candidates: Sequence[RerankCandidate]
        ) -> list[str]:
            handed.append(query.text)
            return super().rerank(query, candidates)

    engines, _ = _engines(CORPUS)
    watched = dataclasses.replace(engines, reranker=Watching())
    plain = SearchRequest("replica lag", limit=4)
    kept = hybrid_search(STAFF, plain, watched)
    fused = hybrid_search(STAFF, dataclasses.replace(plain, rerank=False), engines)
    assert isinstance(kept, Found) and isinstance(fused, Found)
    assert [h.chunk.chunk_id for h in kept.hits] == [h.chunk.chunk_id for h in fused.hits]
    assert handed == []
    assert not IdentifierReranker().reorders(interpret("replica lag"))
    assert IdentifierReranker().reorders(interpret("replica lag ERR-4021"))
    hybrid_search(STAFF, SearchRequest("replica lag ERR-4021", limit=4), watched)
    assert handed == ["replica lag ERR-4021"]
