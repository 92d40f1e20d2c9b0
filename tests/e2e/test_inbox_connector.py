"""The inbox folder is its tenant's `inbox` connector (issue #34): what the
connector sync gives every source, the inbox now has — and what the inbox
keeps of its own. Real PostgreSQL catalog, real OpenSearch, real blob store."""

from __future__ import annotations

import os
import shutil

import pytest

from groundwork.connectors.inbox import INBOX_KIND, INBOX_NAME
from groundwork.errors import Refused
from groundwork.services import connectors as service
from groundwork.services.connector_sync import sync_instance
from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from resources.connectors.factory import build_connector
from resources.connectors.ports import ConnectorPlatform
from tests.e2e.helpers import inbox_pass, write_inbox


def _sources(platform: Platform, tenant_id: str) -> dict[str, tuple[str, str, int]]:
    """origin -> (source id, filename, versions) of the tenant's live sources."""
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT s.origin, s.source_id, s.filename, count(v.version_id) FROM sources s "
            "JOIN source_versions v ON v.source_id = s.source_id "
            "WHERE s.tenant_id = %s AND s.state = 'active' GROUP BY 1, 2, 3",
            (tenant_id,),
        ).fetchall()
    return {r[0]: (r[1], r[2], int(r[3])) for r in rows}


def test_the_first_pass_adopts_what_the_folder_sync_registered(
    platform: Platform, tenant_id: str
) -> None:
    """Sources registered before the inbox was a connector (origins
    `inbox:<path>`) are its items: nothing is registered twice, and a file
    gone from the folder since is deleted like any absentee."""
    inbox = platform.settings.inbox_dir
    write_inbox(inbox, tenant_id, {"kept.md": "# Kept\n\nstill here\n"})
    for name, text in {"kept.md": "# Kept\n\nstill here\n", "gone.md": "# Gone\n\nleft\n"}.items():
        register_file(
            platform.catalog,
            platform.blobs,
            tenant_id=tenant_id,
            origin=f"inbox:{name}",
            filename=name,
            data=text.encode(),
            subjects=[f"tenant:{tenant_id}"],
            media_type="text/markdown",
        )
    before = _sources(platform, tenant_id)
    report = inbox_pass(platform, tenant_id)
    assert (report.created, report.removed) == (0, 1)
    assert _sources(platform, tenant_id) == {"inbox:kept.md": before["inbox:kept.md"]}
    (instance,) = ConnectorPlatform(platform).connector_catalog().instances(tenant_id)
    assert (instance.kind, instance.name) == (INBOX_KIND, INBOX_NAME)


def test_a_moved_inbox_file_keeps_its_source_and_names_its_new_path(
    platform: Platform, tenant_id: str
) -> None:
    """The folder sync deleted a renamed file and registered it again (all of
    it extracted and embedded again); as a connector item it is a move."""
    inbox = platform.settings.inbox_dir / tenant_id
    write_inbox(platform.settings.inbox_dir, tenant_id, {"draft.md": "# Plan\n\nthe plan\n"})
    assert inbox_pass(platform, tenant_id).created == 1
    (source_id, _, versions) = _sources(platform, tenant_id)["inbox:draft.md"]
    (inbox / "final").mkdir()
    (inbox / "draft.md").rename(inbox / "final" / "plan.md")
    report = inbox_pass(platform, tenant_id)
    assert (report.created, report.moved, report.removed) == (0, 1, 0)
    moved = {origin: row for origin, row in _sources(platform, tenant_id).items()}
    assert list(moved.values()) == [(source_id, "final/plan.md", versions)]


def test_a_folder_that_went_away_keeps_its_documents(platform: Platform, tenant_id: str) -> None:
    """An unmounted share must not empty the tenant: the pass stops on the
    missing folder with its error, and nothing is deleted."""
    write_inbox(platform.settings.inbox_dir, tenant_id, {"a.md": "# A\n\nalpha\n"})
    assert inbox_pass(platform, tenant_id).created == 1
    shutil.rmtree(platform.settings.inbox_dir / tenant_id)
    report = inbox_pass(platform, tenant_id)
    assert report.removed == 0 and report.errors and "not a folder" in report.errors[-1]
    assert list(_sources(platform, tenant_id)) == ["inbox:a.md"]


def test_an_inbox_file_the_upload_policy_refuses_is_named_and_kept(
    platform: Platform, tenant_id: str
) -> None:
    """The rule for what may be registered lives once: an inbox file is
    judged as an upload is, and the refusal names what is accepted."""
    write_inbox(
        platform.settings.inbox_dir, tenant_id, {"notes.md": "# N\n\nok\n", "run.sh": "echo hi\n"}
    )
    for path in (platform.settings.inbox_dir / tenant_id).iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))  # settled: not racy
    report = inbox_pass(platform, tenant_id)
    assert report.created == 1
    assert len(report.refused) == 1 and report.refused[0].startswith("run.sh: unsupported-type")
    assert (platform.settings.inbox_dir / tenant_id / "run.sh").exists()
    # refused for this version: not read again until it changes
    again = inbox_pass(platform, tenant_id)
    assert (again.created, again.refused) == (0, [])


def test_the_inbox_instance_is_not_one_a_user_adds_passes_or_removes(
    platform: Platform, tenant_id: str
) -> None:
    write_inbox(platform.settings.inbox_dir, tenant_id, {"a.md": "# A\n\nalpha\n"})
    inbox_pass(platform, tenant_id)
    ports = ConnectorPlatform(platform)
    catalog = ports.connector_catalog()
    (instance,) = catalog.instances(tenant_id)
    with pytest.raises(Refused, match="inbox folder"):
        sync_instance(platform, catalog, instance, build_connector)
    with pytest.raises(Refused, match="inbox folder"):
        service.remove_connector(ports, tenant_id, INBOX_NAME)
    with pytest.raises(Refused, match="inbox folder"):
        service.add_connector(
            ports,
            tenant_id,
            service.ConnectorRequest("fsspec", INBOX_NAME, {"root": "/srv/x"}),
        )
    # shown like any connector, with its state
    (view,) = service.list_connectors(ports, tenant_id)
    assert view.to_dict()["kind"] == INBOX_KIND and view.state is not None
    # paused: no pass, the folder's documents stay
    service.pause_connector(ports, tenant_id, INBOX_NAME)
    write_inbox(platform.settings.inbox_dir, tenant_id, {"b.md": "# B\n\nbeta\n"})
    assert inbox_pass(platform, tenant_id).skipped == "the inbox connector is paused"
    assert list(_sources(platform, tenant_id)) == ["inbox:a.md"]
