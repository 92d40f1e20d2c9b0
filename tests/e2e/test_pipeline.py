"""End to end through Dagster's `materialize`, on the real engines."""

from __future__ import annotations

import uuid
from dataclasses import replace

import dagster as dg
import pytest

from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import (
    FusionConstants,
    RetrievalPolicy,
    SearchMode,
    SearchRequest,
    hybrid_search,
)
from groundwork.retrieval.outcome import Found
from groundwork.services import retrieval
from groundwork.services.connectors import list_connectors
from groundwork.services.retrieval import SearchQuery
from resources.composition.platform import Platform
from resources.connectors.ports import ConnectorPlatform
from tests.e2e.helpers import resource, run_pipeline, tenant_with_notes, write_inbox

RUNBOOK = """# Runbook

## ERR-4021: Quota exceeded

ERR-4021 means the volume reached its storage quota; free space or raise the quota.

## Escalation

Page the storage lead after one hour.
"""

BUDGET = "# Budget\n\nThe hiring budget for 2027 is 3.4M for 22 positions.\n"
OTHER = """# Codes

## ERR-4021: Badge reader offline

At this company ERR-4021 means a badge reader lost its network connection.
"""


@pytest.fixture
def two_tenants(platform: Platform, index_prefix: str) -> tuple[str, str, dg.DagsterInstance]:
    tenant_a = f"a-{uuid.uuid4().hex[:8]}"
    tenant_b = f"b-{uuid.uuid4().hex[:8]}"
    inbox = platform.settings.inbox_dir
    write_inbox(
        inbox,
        tenant_a,
        {
            "runbook.md": RUNBOOK,
            "finance/.subjects": "group:finance\n",
            "finance/budget.md": BUDGET,
            "notes.txt": "Forge is the build system.\n\nRun forge test before merging.\n",
            "data.bin": "\x00\x01binary",
        },
    )
    write_inbox(inbox, tenant_b, {"codes.md": OTHER})
    instance = dg.DagsterInstance.ephemeral()
    model = platform.settings.default_model_key
    for tenant in (tenant_a, tenant_b):
        for result in run_pipeline(instance, tenant, model, resource(index_prefix)):
            assert result.success
    return tenant_a, tenant_b, instance


def _search(
    platform: Platform, scope: AccessScope, query: str, mode: SearchMode = SearchMode.HYBRID
) -> Found:
    outcome = hybrid_search(
        scope,
        SearchRequest(query, mode=mode),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert isinstance(outcome, Found), outcome
    return outcome


def test_a_known_query_finds_its_document_first_with_a_citation(
    platform: Platform, two_tenants
) -> None:
    tenant_a, _, _ = two_tenants
    found = _search(
        platform, AccessScope(tenant_a, (f"tenant:{tenant_a}",)), "What does ERR-4021 mean?"
    )
    top = found.hits[0]
    assert top.chunk.heading_path == ("Runbook", "ERR-4021: Quota exceeded")
    assert top.leg_ranks == {"vector": 1, "keyword": 1}
    citation = top.citation
    assert citation.source_version_id.startswith("ver_") and citation.location.line_start == 5
    assert citation.excerpt.startswith("ERR-4021 means the volume")
    assert len(citation.content_hash) == 64


def test_tenants_never_see_each_other(platform: Platform, two_tenants) -> None:
    tenant_a, tenant_b, _ = two_tenants
    for mode in SearchMode:
        a_hits = _search(
            platform, AccessScope(tenant_a, (f"tenant:{tenant_a}",)), "ERR-4021 badge reader", mode
        )
        assert all("badge" not in h.chunk.body for h in a_hits.hits)
        b_hits = _search(
            platform, AccessScope(tenant_b, (f"tenant:{tenant_b}",)), "ERR-4021 quota", mode
        )
        assert all("quota" not in h.chunk.body for h in b_hits.hits)
        assert not {h.chunk.source_id for h in a_hits.hits} & {
            h.chunk.source_id for h in b_hits.hits
        }
    # Tenant B's key naming tenant A's subject still sees nothing of A.
    outcome = hybrid_search(
        AccessScope(tenant_b, (f"tenant:{tenant_a}",)),
        SearchRequest("ERR-4021 quota"),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert outcome.kind == "nothing_accessible"


def test_subjects_gate_the_finance_folder(platform: Platform, two_tenants) -> None:
    tenant_a, _, _ = two_tenants
    staff = hybrid_search(
        AccessScope(tenant_a, (f"tenant:{tenant_a}",)),
        SearchRequest("hiring budget 2027"),
        platform.search_engines(platform.settings.default_model_key),
    )
    assert not isinstance(staff, Found) or all("3.4M" not in h.chunk.body for h in staff.hits)
    finance = _search(
        platform,
        AccessScope(tenant_a, (f"tenant:{tenant_a}", "group:finance")),
        "hiring budget 2027",
    )
    assert "3.4M" in finance.hits[0].chunk.body


def test_unsupported_files_are_refused_by_name_without_failing_the_run(
    platform: Platform, two_tenants
) -> None:
    """The inbox is judged by the upload policy, as every connector is: a file
    of no accepted type is refused at registration (named, with what is
    accepted, in the step's metadata and the connector's state), not
    registered to fail in extraction; the run goes on."""
    tenant_a, _, instance = two_tenants
    counts = platform.catalog.counts(tenant_a)
    assert counts.sources == 3 and counts.failed == 0
    registered = instance.get_latest_materialization_event(dg.AssetKey("source_registrations"))
    assert registered is not None
    ports = ConnectorPlatform(platform)
    (view,) = list_connectors(ports, tenant_a)
    errors = dict(view.state.item_errors) if view.state else {}
    assert errors["data.bin"].startswith("unsupported-type")


def test_rematerializing_changes_nothing(
    platform: Platform, two_tenants, index_prefix: str
) -> None:
    tenant_a, _, instance = two_tenants
    model = platform.settings.default_model_key
    vectors = platform.vector_index(model)
    before = (
        platform.catalog.counts(tenant_a),
        platform.catalog.live_chunk_ids(tenant_a, model),
        vectors.chunk_ids(tenant_a, live_only=False),
        platform.keywords.chunk_ids(tenant_a, live_only=False),
    )
    results = run_pipeline(instance, tenant_a, model, resource(index_prefix))
    after = (
        platform.catalog.counts(tenant_a),
        platform.catalog.live_chunk_ids(tenant_a, model),
        vectors.chunk_ids(tenant_a, live_only=False),
        platform.keywords.chunk_ids(tenant_a, live_only=False),
    )
    assert before == after
    registrations = results[0].asset_materializations_for_node("source_registrations")[0]
    assert registrations.metadata["new_versions"].value == 0
    assert registrations.metadata["unchanged"].value == 3
    checks = results[1].get_asset_check_evaluations()
    assert [(c.check_name, c.passed) for c in checks] == [
        ("stores_agree", True),
        ("fresh_enough", True),
    ]


def test_a_changed_file_becomes_a_new_version_and_old_text_is_gone(
    platform: Platform, two_tenants, index_prefix: str
) -> None:
    tenant_a, _, instance = two_tenants
    write_inbox(
        platform.settings.inbox_dir,
        tenant_a,
        {"runbook.md": RUNBOOK.replace("one hour", "two hours")},
    )
    run_pipeline(instance, tenant_a, platform.settings.default_model_key, resource(index_prefix))
    scope = AccessScope(tenant_a, (f"tenant:{tenant_a}",))
    found = _search(platform, scope, "when to page the storage lead escalation", SearchMode.KEYWORD)
    escalation = [h for h in found.hits if "Escalation" in h.chunk.heading_path]
    assert escalation and "two hours" in escalation[0].chunk.body
    assert all("one hour" not in h.chunk.body for h in found.hits)
    assert platform.catalog.counts(tenant_a).versions == 4


def test_runs_and_checks_are_recorded_per_partition(platform: Platform, two_tenants) -> None:
    tenant_a, tenant_b, instance = two_tenants
    materialized = instance.get_materialized_partitions(dg.AssetKey("chunks"))
    assert {tenant_a, tenant_b} <= materialized
    published = instance.get_materialized_partitions(dg.AssetKey("published_index"))
    model = platform.settings.default_model_key
    assert dg.MultiPartitionKey({"tenant": tenant_a, "embedding_model": model}) in published


def test_an_extraction_left_behind_by_a_dead_worker_is_picked_up(platform: Platform) -> None:
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.registration import register_file

    tenant = f"d-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:stuck.md",
        filename="stuck.md",
        data=b"# Stuck\n\nA worker died while extracting this.\n",
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )
    assert platform.catalog.claim_extraction(registered.version_id)  # then the worker "dies"
    assert (
        platform.catalog.pending_work(tenant, platform.settings.default_model_key)["extract"] == 1
    )
    report = extract_pending(platform.catalog, platform.blobs, tenant)
    assert report.processed == 1
    assert (
        platform.catalog.pending_work(tenant, platform.settings.default_model_key)["extract"] == 0
    )


def test_extraction_fans_out_over_every_worker_it_is_given(platform: Platform) -> None:
    """A large tenant's first ingest is not one single-threaded process: with
    two workers, two documents are extracted at the same moment (each worker
    waits at a barrier on its first document; done one after the other, the
    barrier would break), every document exactly once, and a worker whose
    document fails does not stop the other."""
    import threading

    from groundwork.extract import extract
    from groundwork.stages.extraction import extract_pending

    tenant = tenant_with_notes(platform, "f", 8)
    barrier = threading.Barrier(2, timeout=10)
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def worker(name: str):  # type: ignore[no-untyped-def]
        def run(data, media_type, filename, limits=None):  # type: ignore[no-untyped-def]
            if not seen[name]:
                barrier.wait()  # both workers hold a document at once
            seen[name].append(filename)
            if filename == "doc-5.md":
                return extract(b"%PDF-1.7 broken", "application/pdf", filename, limits)
            return extract(data, media_type, filename, limits)

        return run

    report = extract_pending(
        platform.catalog, platform.blobs, tenant, extractors=(worker("a"), worker("b"))
    )
    assert seen["a"] and seen["b"]
    assert sorted(seen["a"] + seen["b"]) == sorted(f"doc-{n}.md" for n in range(8))
    assert (report.processed, report.failed) == (7, 1)
    assert report.failures == {"doc-5.md": "malformed"}
    assert (
        platform.catalog.pending_work(tenant, platform.settings.default_model_key)["extract"] == 0
    )


def test_an_infrastructure_error_in_one_extraction_worker_fails_the_run(platform: Platform) -> None:
    """Not a document's problem (OCR missing, say): it is raised, the other
    worker stops after its current document, and what was not extracted stays
    pending for the retry instead of being recorded as failed."""
    from groundwork.errors import CapabilityUnavailable
    from groundwork.extract import extract
    from groundwork.stages.extraction import extract_pending

    tenant = tenant_with_notes(platform, "i", 6)

    def broken(data, media_type, filename, limits=None):  # type: ignore[no-untyped-def]
        raise CapabilityUnavailable("tesseract is not installed")

    with pytest.raises(CapabilityUnavailable):
        extract_pending(platform.catalog, platform.blobs, tenant, extractors=(extract, broken))
    pending = platform.catalog.pending_work(tenant, platform.settings.default_model_key)
    assert pending["extract"] >= 1
    assert platform.catalog.counts(tenant).failed == 0


def test_a_version_whose_bytes_are_gone_fails_once_instead_of_forever(platform: Platform) -> None:
    from groundwork.stages.extraction import extract_pending
    from groundwork.stages.registration import register_file

    tenant = f"g-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    data = f"# Gone\n\nunique {uuid.uuid4().hex}\n".encode()
    registered = register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant,
        origin="api:gone.md",
        filename="gone.md",
        data=data,
        subjects=[f"tenant:{tenant}"],
        media_type="text/markdown",
    )
    key = next(k for k in platform.blobs.list_keys() if platform.blobs.get(k) == data)
    platform.blobs.delete(key)
    report = extract_pending(platform.catalog, platform.blobs, tenant)
    assert report.failed == 1
    assert (
        platform.catalog.pending_work(tenant, platform.settings.default_model_key)["extract"] == 0
    )
    status = platform.catalog.source_status(
        AccessScope(tenant, (f"tenant:{tenant}",)), registered.source_id
    )
    assert status is not None and status["failure_reason"] == "malformed"


def test_a_tenants_own_fusion_constants_shape_its_searches(platform: Platform, two_tenants) -> None:
    """Constants the eval adopted for a tenant are what the search service uses
    for it (the fused scores follow its k and keyword weight) while it searches
    with the model they were tuned on; withdrawn, or tuned on another model,
    the defaults are back. Other tenants are not touched."""
    tenant_a, tenant_b, _ = two_tenants
    _, secret = platform.catalog.create_api_key(tenant_a, [f"tenant:{tenant_a}"], "fusion")
    who = platform.catalog.principal_for_key(secret)
    assert who is not None
    query = SearchQuery("What does ERR-4021 mean?", limit=5)

    def top_score_and_expected(k: int, keyword_weight: float) -> tuple[float, float]:
        top = retrieval.search(platform.for_tenant(tenant_a), who, query).hits[0].hit
        ranks = top.leg_ranks
        expected = sum(
            weight / (k + ranks[leg])
            for leg, weight in (("vector", 1.0), ("keyword", keyword_weight))
            if leg in ranks
        )
        return top.score, expected

    defaults = RetrievalPolicy()
    default_weight = dict(defaults.leg_weights)["keyword"]
    score, expected = top_score_and_expected(defaults.rrf_k, default_weight)
    assert score == pytest.approx(expected)
    serving = platform.catalog.get_tenant(tenant_a).active_model  # type: ignore[union-attr]
    tuned = FusionConstants(2, 1.5, depth=50, model_key=serving)
    assert platform.catalog.set_fusion(tenant_a, tuned)
    score, expected = top_score_and_expected(2, 1.5)
    assert score == pytest.approx(expected)
    # tuned on another model's rankings (the tenant switched models since): the defaults serve
    assert platform.catalog.set_fusion(tenant_a, replace(tuned, model_key="another-model"))
    score, expected = top_score_and_expected(defaults.rrf_k, default_weight)
    assert score == pytest.approx(expected)
    assert platform.catalog.get_tenant(tenant_b).fusion is None  # type: ignore[union-attr]
    assert platform.catalog.set_fusion(tenant_a, None)
    score, expected = top_score_and_expected(defaults.rrf_k, default_weight)
    assert score == pytest.approx(expected)
