from __future__ import annotations

from groundwork.retrieval.query import interpret


def test_stopwords_come_off_and_identifiers_stay_whole() -> None:
    q = interpret("What does ERR-4021 mean in Q3-2026?")
    assert q.keyword_text == "ERR-4021 mean Q3-2026"
    assert q.identifiers == ("ERR-4021", "Q3-2026")


def test_a_query_of_only_stopwords_is_kept() -> None:
    assert interpret("to be or not to be").keyword_text == "to be or not to be"


def test_quoted_phrases_are_kept_as_phrases() -> None:
    q = interpret('where is the "read replica" lag')
    assert q.phrases == ("read replica",)
    assert q.keyword_text == 'lag "read replica"'


def test_a_keyword_query_splits_into_phrases_and_ranked_words() -> None:
    from groundwork.retrieval.query import MAX_PHRASES, keyword_query

    parsed = keyword_query('"storage quota" policy "Q3-2026 revenue" team')
    assert parsed.phrases == ("storage quota", "Q3-2026 revenue")
    assert parsed.words == "policy team"
    stray = keyword_query('policy "unclosed quote')
    assert stray.phrases == () and stray.words == "policy unclosed quote"
    assert keyword_query('""  ').phrases == ()
    many = keyword_query(" ".join(f'"w{n} x"' for n in range(20)))
    assert len(many.phrases) == MAX_PHRASES


def test_interpretation_hands_phrases_to_the_keyword_leg_quoted() -> None:
    from groundwork.retrieval.query import interpret, keyword_query

    interpreted = interpret('what is the "storage quota" for the team')
    assert keyword_query(interpreted.keyword_text).phrases == ("storage quota",)


def test_codes_start_with_a_letter_and_hold_a_digit() -> None:
    from groundwork.retrieval.query import is_code

    assert [t for t in ("ERR-4021", "Q3-2026", "IL-6", "rs1800795", "METTL3") if is_code(t)] == [
        "ERR-4021",
        "Q3-2026",
        "IL-6",
        "rs1800795",
        "METTL3",
    ]
    assert not any(is_code(t) for t in ("50", "2015", "50th", "30-second", "5-year", "well-known"))


def test_a_lookup_names_a_code_and_little_else() -> None:
    assert interpret("which paper mentions METTL3").is_lookup
    assert interpret("IL-6 findings").is_lookup
    assert not interpret("IL-6 levels rise in mice fed a high fat diet").is_lookup
    assert not interpret("which paper mentions the 50th game").is_lookup
