"""The compiled overview page's pure parts: bounded, deterministic, cited."""

from __future__ import annotations

from dataclasses import replace

from groundwork.chunking import approximate_tokens
from groundwork.overview import (
    OVERVIEW_TOKENS,
    OverviewSource,
    compile_overview,
    inputs_digest,
    render,
)


def _source(
    n: int, title: str = "", summary: str = "", sections: tuple[str, ...] = ()
) -> OverviewSource:
    return OverviewSource(
        source_id=f"src_{n:04d}",
        version_id=f"ver_{n:04d}",
        summary_stamp="1700000000.0",
        title=title or f"Document {n}",
        media_type="text/markdown",
        summary=summary or f"Document {n} explains topic {n}. It has more words after that.",
        sections=sections,
        pointers=(f"chk_{n:04d}_0",),
    )


GUIDE = _source(
    1,
    "Travel guide",
    "Night trains to the coast leave at 22:10 on Fridays. Sleeper cabins are booked online.",
    ("Travel guide", "Refunds", "Cabins"),
)
PLAN = _source(2, "Hiring plan", "The hiring budget for 2027 is 3.4M across four teams.")


def test_a_small_corpus_gets_each_source_with_its_lead_and_sections_each_cited() -> None:
    page = compile_overview("acme", [PLAN, GUIDE], tokenizer="approx")
    assert [s.source_id for s in page.statements] == ["src_0002", "src_0001"]  # title order
    guide = page.statements[1]
    assert guide.text.startswith("Travel guide (markdown): Night trains to the coast")
    assert "Sections: Refunds; Cabins." in guide.text  # the title is not a section
    assert (guide.version_id, guide.pointers) == ("ver_0001", ("chk_0001_0",))
    text = render(page.statements, 0)
    assert text.splitlines()[1].startswith("[2] Travel guide")
    assert guide.title == "Travel guide"
    # the budget holds room for the line about the rest, for any reader
    assert approximate_tokens(text) < page.tokens <= OVERVIEW_TOKENS
    assert page.source_count == 2 and page.tokenizer == "approx"


def test_the_page_is_deterministic_and_its_digest_names_its_inputs() -> None:
    one = compile_overview("acme", [GUIDE, PLAN])
    two = compile_overview("acme", [PLAN, GUIDE])
    assert one == two
    assert one.inputs_digest == inputs_digest([PLAN.input, GUIDE.input])
    # a new version, or a summary recompiled, is a different input
    assert compile_overview("acme", [replace(GUIDE, version_id="ver_x"), PLAN]).inputs_digest != (
        one.inputs_digest
    )
    assert (
        compile_overview("acme", [replace(GUIDE, summary_stamp="2"), PLAN]).inputs_digest
        != one.inputs_digest
    )


def test_a_large_corpus_degrades_to_titles_then_to_a_count_never_past_the_budget() -> None:
    for count in (5, 30, 80, 400):
        sources = [_source(n, sections=("Intro", "Usage")) for n in range(count)]
        page = compile_overview("acme", sources)
        text = render(page.statements, page.source_count - len(page.statements))
        assert approximate_tokens(text) <= page.tokens <= OVERVIEW_TOKENS, count
        assert page.statements, count
    # 400 titles cannot fit: a prefix in title order, then the count of the rest
    assert len(page.statements) < 400
    assert (
        text.splitlines()[-1]
        == f"(and {400 - len(page.statements)} more sources: search or get_summaries for them)"
    )
    titles = [s.text.split(" (")[0] for s in page.statements]
    assert titles == sorted(titles, key=str.casefold)
    # the budget is the caller's tokenizer's: a stricter one lists fewer
    strict = compile_overview("acme", sources, lambda t: 2 * approximate_tokens(t))
    assert len(strict.statements) < len(page.statements)


def test_one_long_title_or_summary_cannot_take_the_page() -> None:
    huge = _source(3, "T" * 5000, "word " * 5000)
    page = compile_overview("acme", [huge, GUIDE])
    assert page.tokens <= OVERVIEW_TOKENS and len(page.statements) == 2
    assert len(page.statements[1].text) < 400


def test_an_empty_corpus_is_an_empty_page() -> None:
    page = compile_overview("acme", [])
    assert page.statements == () and page.tokens == 0 and page.source_count == 0
    assert render(page.statements, 0) == ""
    assert render(page.statements, 2) == "(and 2 more sources: search or get_summaries for them)"
