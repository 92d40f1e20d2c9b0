"""The demo's showcase tenant (samples/initech) goes through the assets and
answers with each kind of location a citation can carry: a PDF table row, a
sheet's cell range, a slide, and a poor scan's text flagged low-confidence."""

from __future__ import annotations

import shutil
import uuid

import dagster as dg
import pytest

from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from resources.composition.platform import Platform
from resources.composition.settings import PROJECT_ROOT
from tests.e2e.helpers import resource, run_pipeline

SAMPLE = PROJECT_ROOT / "samples" / "initech"


@pytest.fixture(scope="module")
def initech(platform: Platform, index_prefix: str) -> str:
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract not installed (Debian tesseract-ocr): the scan needs OCR")
    tenant = f"initech-{uuid.uuid4().hex[:8]}"
    shutil.copytree(SAMPLE, platform.settings.inbox_dir / tenant)
    instance = dg.DagsterInstance.ephemeral()
    for result in run_pipeline(
        instance, tenant, platform.settings.default_model_key, resource(index_prefix)
    ):
        assert result.success
    return tenant


def _top(platform: Platform, tenant: str, query: str) -> Found:
    outcome = hybrid_search(
        AccessScope(tenant, (f"tenant:{tenant}",)),
        SearchRequest(query, limit=3),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert isinstance(outcome, Found), outcome
    return outcome


def test_a_pdf_table_row_is_cited_as_a_row(platform: Platform, initech: str) -> None:
    top = _top(platform, initech, "How much did the team offsite cost in August?").hits[0]
    assert top.chunk.filename == "expenses-q3.pdf"
    assert "| Team offsite | 0 | 18,450 | 0 | 18,450 |" in top.chunk.body
    assert top.citation.location.page == 1 and top.citation.location.row_start is not None


def test_a_sheet_is_cited_by_its_cells(platform: Platform, initech: str) -> None:
    query = "What is the Q2 2027 sales forecast for the Northeast region?"
    top = _top(platform, initech, query).hits[0]
    assert top.chunk.filename == "sales-forecast.xlsx"
    assert top.citation.location.sheet == "Forecast"
    assert top.citation.location.label().startswith("Forecast!A")


def test_a_slide_is_cited_by_its_number(platform: Platform, initech: str) -> None:
    top = _top(platform, initech, "What ships in the second quarter of 2027?").hits[0]
    assert top.chunk.filename == "roadmap-2027.pptx"
    assert top.citation.location.slide == 2
    assert "mobile approvals app" in top.chunk.body


def test_a_poor_scan_answers_and_says_its_text_is_uncertain(
    platform: Platform, initech: str
) -> None:
    found = _top(platform, initech, "When does the parking garage on Elm Street close?")
    memo = [h for h in found.hits if h.chunk.filename == "parking-memo.pdf"]
    assert memo, [h.chunk.filename for h in found.hits]
    assert memo[0].citation.low_confidence and memo[0].chunk.low_confidence
    assert "parking garage on Elm Street" in memo[0].chunk.body


def test_the_golden_set_names_only_files_of_the_sample() -> None:
    from evals.golden import load_golden

    names = {p.name for p in SAMPLE.iterdir()}
    for item in load_golden(PROJECT_ROOT / "samples" / "initech.golden.jsonl"):
        assert set(item.sources) <= names, item
