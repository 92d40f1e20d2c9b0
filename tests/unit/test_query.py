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
