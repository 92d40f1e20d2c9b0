"""The golden-set format: what it accepts, what it refuses (with line
numbers), and the BEIR/SciFact and SQuAD converters into it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.evidence import beir_golden, squad_golden
from evals.golden import GoldenSetError, load_golden, parse_lines, write_golden


def _lines(*rows: object) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in rows]


def test_a_hand_written_set_loads_with_graded_sources_spans_and_answers() -> None:
    [first, second] = parse_lines(
        _lines(
            {
                "id": "quota",
                "query": "What does ERR-4021 mean?",
                "sources": {"incident-runbook.md": 2, "src_abc": 1, "notes": 0},
                "evidence": ["reached its storage quota"],
                "reference_answer": "The volume is full.",
            },
            "",
            "// a comment line",
            {"query": "vacation days?", "sources": ["employee-handbook.md"]},
        )
    )
    assert first.query_id == "quota" and first.sources["incident-runbook.md"] == 2
    assert first.relevant == ("incident-runbook.md", "src_abc")
    assert first.evidence == (("", ("reached its storage quota",)),)
    assert first.reference_answer == "The volume is full."
    assert second.query_id == "line-4" and second.sources == {"employee-handbook.md": 1}
    assert second.reference_ids == ("employee-handbook.md",)


def test_bad_rows_are_refused_with_their_line_numbers_all_at_once(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(
        "\n".join(
            _lines(
                {"query": "fine", "sources": ["a.md"]},
                "{not json",
                {"sources": ["a.md"]},
                {"query": "q", "sources": {"a.md": 7}},
                {"query": "q", "sources": {"a.md": 0}},
                {"query": "q", "sources": ["a.md"], "evidnce": ["typo"]},
                {"id": "x", "query": "q", "sources": ["a.md"]},
                {"id": "x", "query": "again", "sources": ["b.md"]},
                {"query": "q", "sources": []},
                {"query": "  ", "sources": ["a.md"]},
                {"query": "q", "sources": ["a.md"], "evidence": "a string"},
                ["not", "an", "object"],
            )
        )
    )
    with pytest.raises(GoldenSetError) as refused:
        load_golden(path)
    problems = dict(refused.value.problems)
    assert sorted(problems) == [2, 3, 4, 5, 6, 8, 9, 10, 11, 12]
    assert "not valid JSON" in problems[2]
    assert "query is missing" in problems[3]
    assert "integer 0..3" in problems[4]
    assert "grade above 0" in problems[5]
    assert "unknown field(s) evidnce" in problems[6]
    assert "repeats line 7" in problems[8]
    assert "non-empty" in problems[9] and "query must be" in problems[10]
    assert "evidence must be" in problems[11] and "JSON object" in problems[12]
    assert "line 4:" in str(refused.value) and str(path) in str(refused.value)


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(GoldenSetError, match="no queries"):
        parse_lines(["", "// nothing"])


def test_a_written_set_reads_back_the_same(tmp_path: Path) -> None:
    rows = _lines(
        {"id": "a", "query": "q1", "sources": {"d1": 2}, "evidence": {"d1": ["span"]}},
        {"id": "b", "query": "q2", "sources": {"d2": 1}, "passages": ["p"], "evidence": ["s"]},
    )
    golden = parse_lines(rows)
    again = load_golden(write_golden(golden, tmp_path / "g.jsonl"))
    assert [(g.query_id, dict(g.sources), g.evidence, g.passages) for g in again] == [
        (g.query_id, dict(g.sources), g.evidence, g.passages) for g in golden
    ]


def _scifact_like(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": ["Replicas lag.", "Long transactions block replay."], "d2": ["Quota."]}
    with open(folder / "corpus.jsonl", "w") as handle:
        for doc_id, sentences in docs.items():
            handle.write(json.dumps({"_id": doc_id, "title": doc_id, "text": " ".join(sentences)}))
            handle.write("\n")
    queries = {"1": "why do replicas lag", "2": "what is a quota", "3": "unjudged"}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n")
    sentences = folder / "sentences"
    sentences.mkdir()
    with open(sentences / "corpus.jsonl", "w") as handle:
        for doc_id, abstract in docs.items():
            handle.write(json.dumps({"doc_id": doc_id, "abstract": abstract}) + "\n")
    # not claims_train.jsonl: the file is found by pattern
    (sentences / "claims_dev.jsonl").write_text(
        json.dumps({"id": 1, "claim": queries["1"], "evidence": {"d1": [{"sentences": [1]}]}})
        + "\n"
    )
    (sentences / "claims_test_unlabelled.jsonl").write_text(
        json.dumps({"id": 2, "claim": queries["2"]}) + "\n"
    )
    return folder


def test_a_beir_folder_converts_with_sentence_evidence_found_by_pattern(tmp_path: Path) -> None:
    folder = _scifact_like(tmp_path / "scifact")
    golden = beir_golden(folder, "test", folder / "sentences")
    assert [g.query_id for g in golden] == ["1", "2"]
    assert golden[0].evidence == (("d1", ("Long transactions block replay.",)),)
    assert golden[0].passages == (("d1", "d1\n\nReplicas lag. Long transactions block replay."),)
    assert golden[1].evidence == () and golden[1].sources == {"d2": 1}
    # a subset of the corpus: queries none of whose documents are held are left out
    assert [g.query_id for g in beir_golden(folder, "test", None, limit_docs=1)] == ["1"]


def test_squad_converts_each_answerable_question(tmp_path: Path) -> None:
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "title": "Storage_Systems",
                        "paragraphs": [
                            {
                                "context": "A quota caps a volume at 10 GB.",
                                "qas": [
                                    {
                                        "question": "What caps a volume?",
                                        "answers": [{"text": "A quota"}, {"text": "A quota"}],
                                    },
                                    {"question": "unanswerable", "answers": []},
                                ],
                            }
                        ],
                    }
                ]
            }
        )
    )
    [item] = squad_golden(path)
    assert item.query_id == "q0" and item.sources == {"0-0": 1}
    assert item.evidence == (("0-0", ("A quota",)),)
    assert item.passages == (("0-0", "Storage Systems\n\nA quota caps a volume at 10 GB."),)


def test_every_golden_identifier_is_a_code_to_the_product() -> None:
    """The identifier golden set (evals/identifiers.py) asks for codes the
    product must recognise as codes (groundwork.retrieval.query.is_code): the
    keyword leg's exact clause and the reranker's lookup lift read that one
    detector, so a golden identifier it did not know could never be lifted."""
    from evals.beir import BeirDocument
    from evals.identifiers import identifier_golden_from, is_strong_identifier
    from groundwork.retrieval.query import interpret, is_code

    documents = [
        BeirDocument("d1", "IL-6 and p53", "BRCA1, rs1800795, ERR-4021 and alphaPS2betaPS."),
        BeirDocument("d2", "Kir5.1", "METTL3/14, eat-2 mutants, 13-fold, 2003-january, 5-mb."),
    ]
    golden = identifier_golden_from(documents, count=50)
    assert golden
    for query in golden:
        interpreted = interpret(query.query)
        assert interpreted.codes and interpreted.is_lookup, query.query
    for token in ("il-6", "p53", "brca1", "rs1800795", "err-4021", "mettl3", "eat-2"):
        assert is_strong_identifier(token) and is_code(token)
