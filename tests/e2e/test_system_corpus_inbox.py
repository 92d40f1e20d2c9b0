"""An inbox folder named `system` never creates the shared system corpus
(issue #35): every tenant reads its documents, so only `groundwork tenant
create-system` makes it; the folder's registration run is skipped until then."""

from __future__ import annotations

import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets.registration import source_registrations
from groundwork.ports import SYSTEM_TENANT
from resources.composition.platform import Platform
from tests.e2e.helpers import resource, write_inbox


def test_an_inbox_folder_does_not_create_the_system_corpus(
    platform: Platform, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if platform.catalog.get_tenant(SYSTEM_TENANT) is not None:
        pytest.skip("this database has a system corpus already")
    monkeypatch.setenv("GROUNDWORK_INBOX", str(tmp_path))
    write_inbox(tmp_path, SYSTEM_TENANT, {"notice.md": "# Notice\n\nEveryone would read this.\n"})
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", [SYSTEM_TENANT])
    # an index prefix of its own: a platform built now, reading this inbox
    groundwork = resource(f"gwsysinbox-{uuid.uuid4().hex[:8]}")
    result = dg.materialize(
        [source_registrations],
        partition_key=SYSTEM_TENANT,
        instance=instance,
        resources={"groundwork": groundwork},
    )
    assert result.success
    event = result.asset_materializations_for_node("source_registrations")[0]
    assert event.metadata["skipped"].value == "the system corpus is not created yet"
    assert platform.catalog.get_tenant(SYSTEM_TENANT) is None
