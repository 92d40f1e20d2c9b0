"""An eval suite and one run's result as plain records, and `EvalRuns`, the
port that keeps them: stored by the eval store adapter, compared over time and
rendered into the report. In the core so the store (an adapter) needs nothing
from the evals package."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable


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


@dataclass(frozen=True, slots=True)
class ServedMark:
    """What an evaluation was scored on, read when it starts: its tenant's
    search generation (raised by every change to what searches see) and its
    suite's version. A run recorded with the mark counts for that state
    whoever started it (the sensor, the CLI, the UI), so the same state is
    not evaluated twice."""

    search_generation: int
    suite_updated_at: datetime


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One recorded run as it reads back: the suite and results as recorded
    (`EvalSuite.to_dict()`, `EvalResult.to_dict()`), the hybrid nDCG@10 the
    gates compare, and when it was recorded."""

    run_id: str
    tenant_id: str
    model_key: str
    suite: dict[str, Any]
    results: dict[str, Any]
    ndcg_hybrid: float | None
    created_at: datetime
    mark: ServedMark | None = None  # None for runs recorded before marks were kept


def new_run_id() -> str:
    """A run id to name a run's files by before it is recorded."""
    return f"evr_{uuid.uuid4().hex}"


@runtime_checkable
class EvalRuns(Protocol):
    """What each tenant is evaluated on, and every run it had, kept with the
    configuration it ran with so runs compare over time and gate publication.

    - `suite` is None until `set_suite`; `set_suite` replaces the tenant's
      suite whole. One tenant's suite and runs are never another's.
    - `record` keeps a result under `run_id` (a new id when None) and returns
      the id. It refuses (`StoreError`) a run id already recorded, keeping the
      first run, and a suite or run for a tenant that does not exist.
    - A stored run reads back as recorded: `results` is `result.to_dict()`,
      `suite` is `result.suite.to_dict()`, `ndcg_hybrid` is the result's hybrid
      nDCG@10 (None when it has no hybrid row).
    - `history` is newest first, of one model when `model_key` is given, at
      most `limit` runs; `latest` is the newest run of a tenant and model, or
      None.
    - `served_mark` is None for a tenant without a suite; otherwise the state
      an evaluation starting now is scored on. It changes when the suite is
      set again or what the tenant serves changes. A run recorded with a
      `mark` reads back with it.
    """

    def set_suite(self, tenant_id: str, suite: EvalSuite) -> None: ...

    def suite(self, tenant_id: str) -> EvalSuite | None: ...

    def record(
        self,
        result: EvalResult,
        orchestrator_run: str | None = None,
        run_id: str | None = None,
        mark: ServedMark | None = None,
    ) -> str:
        """`orchestrator_run`: the Dagster run that produced it, when one did;
        `mark`: the `served_mark` read when the evaluation started."""
        ...

    def served_mark(self, tenant_id: str) -> ServedMark | None: ...

    def history(
        self, tenant_id: str, model_key: str | None = None, limit: int = 50
    ) -> list[StoredRun]: ...

    def latest(self, tenant_id: str, model_key: str) -> StoredRun | None: ...
