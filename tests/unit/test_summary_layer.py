"""The summary layer's pure parts: compiling a version's summary page, and the
layered search over in-memory fakes that pass the port conformance suites."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from groundwork.chunking import chunk_id_for, content_hash
from groundwork.documents import Location
from groundwork.errors import InvalidRequest
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import RetrievalPolicy, SearchEngines, SearchRequest
from groundwork.retrieval.layers import layered_search
from groundwork.retrieval.outcome import Found
from groundwork.summaries import (
    MAX_POINTERS,
    RawChunk,
    SummaryTarget,
    compile_summary,
    raw_digest,
)
from tests.unit.in_memory_corpus import CorpusChunk, index_in_memory

TENANT = "acme"
STAFF = AccessScope(TENANT, ("tenant:acme",))
TARGET = SummaryTarget(TENANT, "src_guide", "ver_1", "Travel guide")


def _raw(bodies: Sequence[str]) -> list[RawChunk]:
    return [
        RawChunk(
            chunk_id_for(TENANT, "ver_1", n),
            n,
            ("Travel guide",),
            body,
            content_hash(body),
            Location(line_start=n + 1),
        )
        for n, body in enumerate(bodies)
    ]


class _Generative:
    kind = "generative"
    model = "tiny-chat"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply

    def summarize(self, title: str, text: str) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_the_extractive_page_is_the_lead_sentences_with_pointers_and_a_digest() -> None:
    raw = _raw(
        ["Trains leave hourly. Tickets are sold at the station.", "Refunds take a week."]
        + [f"Appendix {n}." for n in range(8)]
    )
    summary, chunks = compile_summary(TARGET, raw)
    assert summary.kind == "extractive" and summary.model == ""
    assert summary.text.startswith("Trains leave hourly. Tickets are sold at the station.")
    assert (summary.source_id, summary.version_id) == ("src_guide", "ver_1")
    # pointers: the raw chunks it was compiled from, first ones first, bounded
    assert summary.pointers == tuple(c.chunk_id for c in raw[:MAX_POINTERS])
    assert summary.raw_digest == raw_digest((c.chunk_id, c.content_hash) for c in raw)
    # one short page: one chunk of the summary layer of the same version
    [page] = chunks
    assert (page.layer, page.version_id, page.source_id, page.position) == (
        "summary",
        "ver_1",
        "src_guide",
        0,
    )
    assert page.chunk_id == chunk_id_for(TENANT, "ver_1", 0, "summary")
    assert page.chunk_id not in {c.chunk_id for c in raw}  # never a raw chunk's id
    assert page.heading_path == ("Travel guide",) and page.body == summary.text
    assert page.location == raw[0].location


def test_the_digest_changes_with_any_raw_chunk_and_not_with_order() -> None:
    raw = _raw(["One.", "Two."])
    pairs = [(c.chunk_id, c.content_hash) for c in raw]
    assert raw_digest(pairs) == raw_digest(reversed(pairs))
    assert raw_digest(pairs) != raw_digest([pairs[0], (pairs[1][0], content_hash("Two!"))])
    assert raw_digest(pairs) != raw_digest(pairs[:1])


def test_a_long_page_is_cut_at_sentences_into_bounded_chunks() -> None:
    long = " ".join(f"Sentence number {n} says something." for n in range(60))
    summary, chunks = compile_summary(TARGET, _raw(["Lead."]), _Generative(long), max_tokens=40)
    assert summary.kind == "generative" and len(chunks) > 1
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert " ".join(c.body for c in chunks) == summary.text
    assert all(c.token_count <= 40 + 10 for c in chunks)


def test_a_generative_page_is_labelled_with_its_model_and_falls_back_labelled() -> None:
    raw = _raw(["Trains leave hourly.", "Refunds take a week."])
    summary, [page] = compile_summary(TARGET, raw, _Generative("  A   short   summary. "))
    assert (summary.kind, summary.model, summary.text) == (
        "generative",
        "tiny-chat",
        "A short summary.",
    )
    assert page.body == "A short summary."
    failed, _ = compile_summary(TARGET, raw, _Generative(ConnectionError("endpoint down")))
    assert (failed.kind, failed.model) == ("extractive", "")
    assert failed.text.startswith("Trains leave hourly.")
    # a version without text compiles to an empty page, still recorded
    empty, none = compile_summary(TARGET, [])
    assert empty.text == "" and none == [] and empty.pointers == ()


# layered search ---------------------------------------------------------------------
#: (chunk id, layer, text); the source is the id's prefix before ':'
CORPUS = [
    ("rail:1", "raw", "Timetables for regional trains are printed on the platform."),
    ("rail:2", "raw", "Night trains to the coast run on Fridays."),
    ("rail:s", "summary", "Rail travel guide: trains, timetables, night trains to the coast."),
    ("menu:1", "raw", "The canteen menu lists coast fish on Fridays and trains cooks."),
    ("menu:s", "summary", "Canteen menu: lunch dishes and prices."),
    ("hr:1", "raw", "Vacation requests go to the HR portal."),
]


def _engines(corpus: Sequence[tuple[str, str, str]]) -> SearchEngines:
    indexed = index_in_memory(
        TENANT,
        (
            CorpusChunk(
                chunk_id, text, ("tenant:acme",), "summary" if layer == "summary" else "raw"
            )
            for chunk_id, layer, text in corpus
        ),
    )
    return SearchEngines(
        indexed.embedder,
        indexed.vectors,
        indexed.keywords,
        indexed.reader,
        None,
        RetrievalPolicy(),
    )


def _hits(outcome: object) -> list[tuple[str, str]]:
    assert isinstance(outcome, Found)
    return [(h.chunk.chunk_id, h.chunk.layer) for h in outcome.hits]


def test_each_layer_searches_only_its_own_chunks() -> None:
    engines = _engines(CORPUS)
    request = SearchRequest("night trains coast fridays", limit=10)
    raw = _hits(layered_search(STAFF, request, engines))
    assert raw and {layer for _, layer in raw} == {"raw"}
    assert _hits(layered_search(STAFF, request, engines, "raw")) == raw
    summary = _hits(layered_search(STAFF, request, engines, "summary"))
    assert summary and {layer for _, layer in summary} == {"summary"}
    with pytest.raises(InvalidRequest):
        layered_search(STAFF, request, engines, "everything")


def test_summary_first_answers_with_raw_chunks_of_the_sources_the_summaries_chose() -> None:
    engines = _engines(CORPUS)
    request = SearchRequest("night trains coast fridays", limit=10)
    # one source handed on: only the rail guide's raw passages answer
    only_top = _hits(layered_search(STAFF, request, engines, "summary_first", sources=1))
    assert only_top and {c.split(":")[0] for c, _ in only_top} == {"rail"}
    assert {layer for _, layer in only_top} == {"raw"}
    found = layered_search(STAFF, request, engines, "summary_first")
    assert isinstance(found, Found)
    # every hit carries its source's summary rank beside its own legs' ranks
    assert all("summary" in h.leg_ranks for h in found.hits)
    assert [h.rank for h in found.hits] == list(range(1, len(found.hits) + 1))
    # a source with no summary (hr) is never reached through the summaries
    assert "hr" not in {h.chunk.source_id for h in found.hits}


def test_summary_first_falls_back_to_raw_when_nothing_is_summarized() -> None:
    engines = _engines([item for item in CORPUS if item[1] == "raw"])
    request = SearchRequest("night trains coast fridays", limit=10)
    assert _hits(layered_search(STAFF, request, engines, "summary_first")) == _hits(
        layered_search(STAFF, request, engines, "raw")
    )
