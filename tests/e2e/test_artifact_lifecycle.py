"""An artifact's blobs over their life, against the real catalog and blob
store: a revision swaps the current role rows in its commit and purges the
superseded blobs after it; a writer that loses the compare-and-set leaves no
staged blob and no document version; a failing delete is reported, stays
queued and is retried without stopping the other purges; deleting the
artifact purges every blob it reached (roles and exports included); and the
write order holds under a real SIGKILL at each step. Every test runs with the
bytes on the filesystem and in S3 (the SeaweedFS server the tests start)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from groundwork.artifact_edits import edit_from_dict
from groundwork.artifact_roles import purge_superseded
from groundwork.artifacts import (
    Provenance,
    Saved,
    StaleGenerationError,
    create_artifact,
    revise_artifact,
)
from groundwork.errors import StoreError
from groundwork.lifecycle import purge_deleted, request_deletion
from groundwork.ports import AccessScope
from resources.composition.platform import Platform
from tests.conftest import TEST_DATABASE
from tests.e2e.test_crash_windows import _blob_env

BODY = "# Plan\n\n## Goals\n\nShip the thing.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"


@pytest.fixture(params=["filesystem", "s3"])
def platform(request: pytest.FixtureRequest, platform: Platform) -> Platform:
    """The folder's platform (conftest's), or the same catalog with its bytes
    in the test SeaweedFS: every test here runs on both stores."""
    return platform if request.param == "filesystem" else request.getfixturevalue("s3_platform")


@pytest.fixture
def tenant(platform: Platform) -> str:
    tenant_id = f"l-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant_id, tenant_id, platform.settings.default_model_key)
    return tenant_id


def _scope(tenant: str) -> AccessScope:
    return AccessScope(tenant, (f"tenant:{tenant}",))


def _create(platform: Platform, tenant: str, fmt: str = "pdf") -> str:
    saved = create_artifact(
        platform.catalog,
        platform.blobs,
        platform.artifacts,
        tenant_id=tenant,
        subjects=[f"tenant:{tenant}"],
        path="plans/plan.md",
        markdown=f"{BODY}\nFor {tenant}.\n",  # bytes of its own: no blob shared with another test
        provenance=Provenance("test", {}, f"run-1-{tenant}"),
        fmt=fmt,
    )
    return saved.artifact_id


def _append(platform: Platform, tenant: str, artifact: str, text: str, store: Any = None) -> Any:
    return revise_artifact(
        platform.catalog,
        platform.blobs,
        store or platform.artifacts,
        _scope(tenant),
        artifact,
        expected_generation=platform.artifacts.get(_scope(tenant), artifact).generation,  # type: ignore[union-attr]
        provenance=Provenance("test", {"text": text}, "run-2"),
        edits=[edit_from_dict({"op": "append", "text": text})],
    )


def _role_keys(platform: Platform, artifact: str) -> dict[str, str]:
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT role, blob_key FROM artifact_files WHERE artifact_id = %s AND role <> 'export'",
            (artifact,),
        ).fetchall()
    return {role: key for role, key in rows}


def _counts(platform: Platform, artifact: str) -> tuple[int, int, int]:
    """(document versions, artifact versions, queued purges)."""
    with platform.pool.connection() as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM source_versions v JOIN artifacts a USING (source_id) "
            "        WHERE a.artifact_id = %s), "
            "       (SELECT count(*) FROM artifact_versions WHERE artifact_id = %s), "
            "       (SELECT count(*) FROM artifact_blob_purges WHERE artifact_id = %s)",
            (artifact, artifact, artifact),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_a_revision_purges_the_superseded_role_blobs(platform: Platform, tenant: str) -> None:
    artifact = _create(platform, tenant)
    old = _role_keys(platform, artifact)
    assert set(old) == {"primary", "preview", "source"}
    saved = _append(platform, tenant, artifact, "A second paragraph.")
    assert saved.generation == 2 and saved.unpurged == ()
    new = _role_keys(platform, artifact)
    assert set(new) == set(old) and not set(new.values()) & set(old.values())
    assert all(platform.blobs.exists(k) for k in new.values())
    assert not any(platform.blobs.exists(k) for k in old.values())
    assert _counts(platform, artifact) == (2, 2, 0)
    # the history keeps each version's document (restore works by reference)
    versions = platform.artifacts.versions(_scope(tenant), artifact)
    assert all(platform.blobs.exists(v.blob_key) for v in versions)


def test_a_lost_compare_and_set_leaves_no_staged_blob_and_no_version(
    platform: Platform, tenant: str
) -> None:
    artifact = _create(platform, tenant, "docx")
    staged: list[str] = []

    class RacedStore:
        """Lets a rival revision commit just before this writer's commit."""

        def __getattr__(self, name: str) -> object:
            return getattr(platform.artifacts, name)

        def commit_version(self, *args: Any) -> int:
            staged.extend(f.blob_key for f in args[-1])
            _append(platform, tenant, artifact, "The rival's paragraph.")
            return platform.artifacts.commit_version(*args)

    with pytest.raises(StaleGenerationError):
        _append(platform, tenant, artifact, "The loser's paragraph.", store=RacedStore())
    assert _counts(platform, artifact) == (2, 2, 0)  # gen 1 and the rival's, nothing else
    assert staged and not any(platform.blobs.exists(k) for k in staged)
    with platform.pool.connection() as conn:
        loser = conn.execute(
            "SELECT count(*) FROM source_versions v JOIN artifacts a USING (source_id) "
            "WHERE a.artifact_id = %s AND v.version_id NOT IN "
            "(SELECT source_version_id FROM artifact_versions WHERE artifact_id = %s)",
            (artifact, artifact),
        ).fetchone()
    assert loser == (0,)


def test_a_failing_delete_is_reported_queued_and_retried(platform: Platform, tenant: str) -> None:
    artifact = _create(platform, tenant, "xlsx")
    old = _role_keys(platform, artifact)

    class RefusingBlobs:
        def __getattr__(self, name: str) -> object:
            return getattr(platform.blobs, name)

        def delete(self, key: str) -> None:
            if key == old["preview"]:
                raise StoreError("the store refused the delete")
            platform.blobs.delete(key)

    saved = revise_artifact(
        platform.catalog,
        RefusingBlobs(),  # type: ignore[arg-type]
        platform.artifacts,
        _scope(tenant),
        artifact,
        expected_generation=1,
        provenance=Provenance("test", {}, "run-2"),
        edits=[edit_from_dict({"op": "append", "text": "More."})],
    )
    assert isinstance(saved, Saved) and saved.generation == 2 and len(saved.unpurged) == 1
    assert old["preview"] in saved.unpurged[0] and "refused" in saved.unpurged[0]
    # the others went; the refused one is queued with its error and attempt
    assert not platform.blobs.exists(old["primary"]) and not platform.blobs.exists(old["source"])
    assert platform.blobs.exists(old["preview"])
    with platform.pool.connection() as conn:
        queued = conn.execute(
            "SELECT blob_key, attempts, last_error FROM artifact_blob_purges WHERE tenant_id = %s",
            (tenant,),
        ).fetchall()
    assert [(k, n) for k, n, _ in queued] == [(old["preview"], 1)] and "refused" in queued[0][2]
    assert purge_superseded(platform.artifacts, platform.blobs, tenant) == ()
    assert not platform.blobs.exists(old["preview"]) and _counts(platform, artifact)[2] == 0


def test_deletion_purges_every_blob_the_artifact_reached(platform: Platform, tenant: str) -> None:
    from groundwork.artifact_exports import export_version

    artifact = _create(platform, tenant, "pptx")
    _append(platform, tenant, artifact, "Second.")
    record = platform.artifacts.get(_scope(tenant), artifact)
    assert record is not None
    version = platform.artifacts.versions(_scope(tenant), artifact)[0]
    exported = export_version(
        platform.artifacts,
        platform.blobs,
        tenant,
        artifact,
        version,
        "docx",
        "plan",
        secret=platform.approval_secret(),
        now=datetime.now(UTC),
    )
    assert exported["state"] == "rendered"
    with platform.pool.connection() as conn:
        keys = {
            r[0]
            for r in conn.execute(
                "SELECT blob_key FROM artifact_files WHERE artifact_id = %s UNION "
                "SELECT v.blob_key FROM source_versions v WHERE v.source_id = %s",
                (artifact, record.source_id),
            )
        }
    assert len(keys) >= 6 and all(platform.blobs.exists(k) for k in keys)
    request_deletion(platform.catalog, platform.indexes(), tenant, record.source_id)
    report = purge_deleted(platform.catalog, platform.indexes(), platform.blobs, tenant)
    assert report.failures == [] and report.sources == 1
    assert [k for k in keys if platform.blobs.exists(k)] == []


def _crash(platform: Platform, step: str, tenant: str, artifact: str) -> int:
    """The writer in a process of its own, on this platform's blob store."""
    return subprocess.run(
        [sys.executable, "-m", "tests.e2e.crash_artifacts", step, TEST_DATABASE, tenant, artifact],
        capture_output=True,
        timeout=180,
        env={**os.environ, **_blob_env(platform)},
    ).returncode


@pytest.mark.parametrize("step", ["after-version", "before-commit"])
def test_killed_before_the_commit_the_current_generation_is_intact(
    platform: Platform, tenant: str, step: str
) -> None:
    artifact = _create(platform, tenant)
    before = _role_keys(platform, artifact)
    assert _crash(platform, step, tenant, artifact) == -signal.SIGKILL
    record = platform.artifacts.get(_scope(tenant), artifact)
    assert record is not None and record.generation == 1
    assert _role_keys(platform, artifact) == before
    assert all(platform.blobs.exists(k) for k in before.values())
    documents, versions, queued = _counts(platform, artifact)
    assert versions == 1 and queued == 0
    assert documents == 2  # the staged document version: stored, never current
    current = platform.artifacts.versions(_scope(tenant), artifact)[-1]
    assert b"writer" not in platform.blobs.get(current.blob_key)


def test_killed_after_the_commit_the_purge_is_queued_and_finished_later(
    platform: Platform, tenant: str, index_prefix: str
) -> None:
    """The deletion sweep (the tenant's partition) finishes the queued purge."""
    import dagster as dg

    from assets.lifecycle import deletion_sweep
    from pipelines.definitions import ALL_ASSETS
    from tests.e2e.helpers import resource

    artifact = _create(platform, tenant)
    before = _role_keys(platform, artifact)
    assert _crash(platform, "after-commit", tenant, artifact) == -signal.SIGKILL
    record = platform.artifacts.get(_scope(tenant), artifact)
    assert record is not None and record.generation == 2
    after = _role_keys(platform, artifact)
    assert set(after) == set(before) and not set(after.values()) & set(before.values())
    assert _counts(platform, artifact) == (2, 2, 3)  # the superseded blobs wait in the queue
    assert all(platform.blobs.exists(k) for k in before.values())
    if platform.settings.blob_backend == "s3":
        # the sweep's own call (assets/lifecycle.py): its Dagster resource builds
        # its platform from this process's settings, which name the folder
        assert purge_superseded(platform.artifacts, platform.blobs, tenant) == ()
        assert not any(platform.blobs.exists(k) for k in before.values())
        assert _counts(platform, artifact)[2] == 0
        return
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [tenant])
    swept = dg.materialize(
        ALL_ASSETS,
        selection=[deletion_sweep],
        partition_key=tenant,
        instance=instance,
        resources={"groundwork": resource(index_prefix)},
    )
    assert swept.success
    assert not any(platform.blobs.exists(k) for k in before.values())
    assert _counts(platform, artifact)[2] == 0
