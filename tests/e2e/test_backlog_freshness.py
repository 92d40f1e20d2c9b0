"""The backlog freshness check (issue #33): a tenant whose oldest waiting
version has waited longer than the freshness target fails `backlog_freshness`
(severity error) in the Dagster UI, naming the stage and the age; a tenant
whose pipeline keeps up passes. Real catalog; the check run through Dagster."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.freshness import BACKLOG_FRESHNESS, backlog_freshness
from groundwork.stages.registration import register_file
from pipelines.definitions import ALL_ASSETS
from resources.composition.platform import Platform
from tests.e2e.helpers import resource


def _register(platform: Platform, tenant_id: str) -> None:
    register_file(  # registered, not extracted: one version of backlog
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin=f"inbox://{tenant_id}/waiting.md",
        filename="waiting.md",
        data=b"# Waiting\n\nnot yet extracted\n",
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/markdown",
    )


def _check(tenant_id: str, index_prefix: str, tmp_path: Path) -> dg.AssetCheckEvaluation:
    """The check as the ingest run executes it: after the serving index (which
    has nothing to publish here, so the backlog stays as registered)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.add_dynamic_partitions("tenant", [tenant_id])
        result = dg.materialize(
            [*ALL_ASSETS, backlog_freshness],
            selection=["serving_index"],
            partition_key=tenant_id,
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
    [evaluation] = [
        e for e in result.get_asset_check_evaluations() if e.check_name == BACKLOG_FRESHNESS
    ]
    return evaluation


def test_a_backlog_older_than_the_target_fails_the_check(
    platform: Platform, tenant_id: str, index_prefix: str, tmp_path: Path
) -> None:
    _register(platform, tenant_id)
    fresh = _check(tenant_id, index_prefix, tmp_path / "fresh")
    assert fresh.passed  # waiting seconds, not a quarter of an hour
    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE source_versions SET created_at = created_at - interval '2 hours' "
            "WHERE tenant_id = %s",
            (tenant_id,),
        )
    stale = _check(tenant_id, index_prefix, tmp_path / "stale")
    assert not stale.passed
    assert stale.severity == dg.AssetCheckSeverity.ERROR
    assert float(stale.metadata["oldest_waiting_seconds"].value) >= 7000  # type: ignore[arg-type]
    waiting = stale.metadata["waiting"].value
    assert isinstance(waiting, dict) and waiting["extract"] == 1


def test_a_tenant_without_backlog_passes(
    platform: Platform, tenant_id: str, index_prefix: str, tmp_path: Path
) -> None:
    evaluation = _check(tenant_id, index_prefix, tmp_path)
    assert evaluation.passed
    assert evaluation.metadata["waiting"].value == {}
