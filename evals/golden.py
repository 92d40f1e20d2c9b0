"""The golden set: what a quality owner expects their own corpus to answer.

A JSON Lines file, one query per line (blank lines and lines starting with
`//` are ignored):

    {"id": "err-4021",                                  # optional; default line-<n>
     "query": "What does ERR-4021 mean?",               # required
     "sources": {"incident-runbook.md": 2, "x.md": 1},  # required: graded (0-3), or a list (grade 1)
     "evidence": ["reached its storage quota"],         # optional answer spans / evidence sentences
     "passages": ["ERR-4021 means a customer's ..."],   # optional expected passages
     "reference_answer": "The volume is full ..."}      # optional

A source is named the way a person knows it: its id (`src_...`), its
filename as registered (`finance/budget-2027.md`), or that filename without
its extension (how BEIR document ids map onto `<id>.md`). `evidence` and
`passages` may also be objects keyed by source, when it matters which source
holds them (SciFact: one groundedness item per claim and document).

Every row is checked before anything runs; a bad row is refused with its line
number, and all bad rows are reported at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_GRADE = 3  # TREC-style graded relevance: 0 not relevant .. 3 perfectly relevant
FIELDS = frozenset({"id", "query", "sources", "evidence", "passages", "reference_answer"})


class GoldenSetError(ValueError):
    """One or more rows refused; `problems` holds (line number, what is wrong)."""

    def __init__(self, path: str, problems: Sequence[tuple[int, str]]) -> None:
        self.path = path
        self.problems = tuple(problems)
        listed = "\n".join(f"  line {n}: {why}" for n, why in self.problems[:50])
        more = f"\n  ... and {len(self.problems) - 50} more" if len(self.problems) > 50 else ""
        super().__init__(f"{path}: {len(self.problems)} bad row(s)\n{listed}{more}")


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    query_id: str
    query: str
    sources: Mapping[str, int]  # source reference -> grade
    # (source or "" when not tied to one, spans): any span inside the context counts as grounded
    evidence: tuple[tuple[str, tuple[str, ...]], ...] = ()
    passages: tuple[tuple[str, str], ...] = ()  # (source or "", expected passage)
    reference_answer: str | None = None
    line: int = 0

    @property
    def relevant(self) -> tuple[str, ...]:
        return tuple(ref for ref, grade in self.sources.items() if grade > 0)

    @property
    def reference_ids(self) -> tuple[str, ...]:
        """The gold sources for ID-based context metrics: those with an expected
        passage when passages are tied to sources, else every relevant source."""
        tied = tuple(dict.fromkeys(ref for ref, _ in self.passages if ref))
        return tied or self.relevant

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.query_id, "query": self.query}
        row["sources"] = dict(self.sources)
        if self.evidence:
            if all(ref for ref, _ in self.evidence):
                row["evidence"] = {ref: list(spans) for ref, spans in self.evidence}
            else:
                row["evidence"] = [s for _, spans in self.evidence for s in spans]
        if self.passages:
            if all(ref for ref, _ in self.passages):
                row["passages"] = dict(self.passages)
            else:
                row["passages"] = [text for _, text in self.passages]
        if self.reference_answer is not None:
            row["reference_answer"] = self.reference_answer
        return row


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string")
    return value


def _sources(value: object) -> dict[str, int]:
    if isinstance(value, list):
        value = {_text(ref, "each source"): 1 for ref in value}
    if not isinstance(value, dict) or not value:
        raise ValueError(
            'sources must be a non-empty object {"source": grade} or a list of sources'
        )
    grades: dict[str, int] = {}
    for ref, grade in value.items():
        _text(ref, "a source name")
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise ValueError(
                f"the grade of {ref!r} must be an integer 0..{MAX_GRADE}, not {grade!r}"
            )
        grades[ref] = grade
    if not any(grades.values()):
        raise ValueError("sources must name at least one source with a grade above 0")
    return grades


def _evidence(value: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if isinstance(value, list):
        spans = tuple(_text(s, "each evidence span") for s in value)
        return (("", spans),) if spans else ()
    if isinstance(value, dict):
        grouped = []
        for ref, spans in value.items():
            _text(ref, "an evidence source")
            listed = [spans] if isinstance(spans, str) else spans
            if not isinstance(listed, list) or not listed:
                raise ValueError(f"evidence for {ref!r} must be a non-empty list of strings")
            grouped.append((ref, tuple(_text(s, "each evidence span") for s in listed)))
        return tuple(grouped)
    raise ValueError("evidence must be a list of strings or an object {source: [strings]}")


def _passages(value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, list):
        return tuple(("", _text(p, "each passage")) for p in value)
    if isinstance(value, dict):
        return tuple(
            (_text(ref, "a passage source"), _text(p, "each passage")) for ref, p in value.items()
        )
    raise ValueError("passages must be a list of strings or an object {source: string}")


def parse_row(row: object, line: int) -> GoldenQuery:
    """One row, or ValueError saying what is wrong with it."""
    if not isinstance(row, dict):
        raise ValueError("a row must be a JSON object")
    unknown = sorted(set(row) - FIELDS)
    if unknown:
        raise ValueError(
            f"unknown field(s) {', '.join(unknown)}; a row has {', '.join(sorted(FIELDS))}"
        )
    if "query" not in row:
        raise ValueError("query is missing")
    if "sources" not in row:
        raise ValueError("sources is missing (which sources should answer this query?)")
    query_id = row.get("id", f"line-{line}")
    if isinstance(query_id, int) and not isinstance(query_id, bool):
        query_id = str(query_id)
    answer = row.get("reference_answer")
    return GoldenQuery(
        query_id=_text(query_id, "id"),
        query=_text(row["query"], "query"),
        sources=_sources(row["sources"]),
        evidence=_evidence(row["evidence"]) if row.get("evidence") is not None else (),
        passages=_passages(row["passages"]) if row.get("passages") is not None else (),
        reference_answer=_text(answer, "reference_answer") if answer is not None else None,
        line=line,
    )


def parse_lines(lines: Iterable[str], name: str = "golden set") -> list[GoldenQuery]:
    queries: list[GoldenQuery] = []
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for n, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("//"):
            continue
        try:
            item = parse_row(json.loads(text), n)
        except json.JSONDecodeError as exc:
            problems.append((n, f"not valid JSON ({exc.msg} at column {exc.colno})"))
            continue
        except ValueError as exc:
            problems.append((n, str(exc)))
            continue
        if item.query_id in seen:
            problems.append((n, f"id {item.query_id!r} repeats line {seen[item.query_id]}"))
            continue
        seen[item.query_id] = n
        queries.append(item)
    if not queries and not problems:
        problems.append((0, "the file holds no queries"))
    if problems:
        raise GoldenSetError(name, problems)
    return queries


def load_golden(path: Path) -> list[GoldenQuery]:
    with open(path, encoding="utf-8") as handle:
        return parse_lines(handle, str(path))


def write_golden(queries: Iterable[GoldenQuery], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for item in queries:
            handle.write(json.dumps(item.to_row(), ensure_ascii=False) + "\n")
    return path
