"""An eval suite and one run's result as plain records: stored by the eval
store adapter, compared over time and rendered into the report. In the core so
the store (an adapter) needs nothing from the evals package."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class EvalSuite:
    """What a tenant is evaluated on (stored per tenant; set by the CLI or tests)."""

    beir_folder: str = ""  # a BEIR-format folder, converted into a golden set per run
    split: str = "train"
    max_queries: int | None = None  # None: every judged query
    limit_docs: int | None = None  # the tenant holds the folder's first N documents
    sentences_folder: str | None = None  # SciFact sentence-level evidence
    squad_file: str | None = None  # SQuAD questions over the same tenant's paragraphs
    max_grounding_items: int | None = 300
    citation_queries: int = 100
    ragas_queries: int = 100
    budget_tokens: int = 2000
    golden_file: str | None = None  # a tenant's own golden set (JSON Lines); wins over beir_folder
    judge_queries: int = 20  # answers composed and judged per run, when a judge is configured

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalSuite:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(slots=True)
class EvalResult:
    tenant_id: str
    model_key: str
    suite: EvalSuite
    relevance: list[dict[str, Any]] = field(default_factory=list)
    groundedness: list[dict[str, Any]] = field(default_factory=list)
    citations: dict[str, Any] = field(default_factory=dict)
    ragas: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)  # answer-level judging (LLM judge)
    #: fusion constants chosen out of fold (evals.fusion_cv), or {"skipped": why}
    cross_validation: dict[str, Any] = field(default_factory=dict)
    per_query_path: str | None = None  # the run's per-query Parquet file
    seconds: float = 0.0

    def metric(self, mode: str, name: str = "ndcg_at_10") -> float | None:
        for row in self.relevance:
            if row["mode"] == mode:
                return float(row[name])
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "relevance": self.relevance,
            "groundedness": self.groundedness,
            "citations": self.citations,
            "ragas": self.ragas,
            "answers": self.answers,
            "cross_validation": self.cross_validation,
            "per_query_path": self.per_query_path,
            "seconds": round(self.seconds, 2),
        }
