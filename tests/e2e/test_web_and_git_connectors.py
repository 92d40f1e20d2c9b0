"""The web site and Git repository connectors end to end through the sync
service and the real engines: added, synced, ingested, searched with a
citation; then a change, a rename (Git) and a deletion at the source, each
mirrored by the next pass. The web site is a loopback server; the repository
a bare one made in the test."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.git import GitRepositoryConfig
from groundwork.connectors.port import Connector
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix
from groundwork.connectors.web import WebSiteConfig
from groundwork.services.connector_sync import PassReport, SyncSettings, run_pass
from groundwork_cli.main import main
from resources.composition.platform import Platform
from resources.connectors.git_repository import GitRepositoryConnector
from resources.connectors.web_site import WebSiteConnector
from resources.postgres.connectors import PostgresConnectorCatalog
from retrieval_api.app import create_app
from testbed.git_repository import BareRepository
from testbed.web_site import LoopbackSite, html_page
from tests.e2e.helpers import publish_registered
from tests.loopback_http import loopback_server


class Mirror:
    """One connector instance of a tenant, its passes and the tenant's searches."""

    def __init__(self, platform: Platform, tenant: str, kind: str, connector: Connector) -> None:
        self.platform = platform
        self.tenant = tenant
        self.connector = connector
        self.catalog = PostgresConnectorCatalog(platform.pool)
        self.instance = self.catalog.add_instance(
            ConnectorInstance(
                f"con_{uuid.uuid4().hex[:12]}", tenant, kind, kind, {}, {}, (f"tenant:{tenant}",)
            )
        )
        _, self.key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "staff")
        self.api = TestClient(create_app(lambda: platform), raise_server_exceptions=False)

    def sync(self) -> PassReport:
        report = run_pass(
            self.platform.for_tenant(self.tenant),
            self.catalog,
            self.instance,
            self.connector,
            SyncSettings(sleep=lambda _: None),
        )
        assert report.finished, report.errors
        publish_registered(self.platform, self.tenant)
        return report

    def hits(self, query: str, needle: str, key: str | None = None) -> list[dict[str, Any]]:
        answer = self.api.post(
            "/v1/search",
            json={"query": query},
            headers={"Authorization": f"Bearer {key or self.key}"},
        )
        assert answer.status_code == 200, answer.text
        return [h for h in answer.json()["hits"] if needle in json.dumps(h)]


@pytest.fixture
def site() -> Iterator[tuple[LoopbackSite, str]]:
    state = LoopbackSite()
    with loopback_server(state.handler()) as root:
        yield state, root


@pytest.mark.parametrize(
    ("lastmod", "second_pass_requests"),
    [(True, [200]), (False, [200, 304])],
    ids=["sitemap-lastmod", "conditional-get"],
)
def test_a_web_site_mirrored_through_its_whole_life(
    platform: Platform,
    tenant_id: str,
    site: tuple[LoopbackSite, str],
    lastmod: bool,
    second_pass_requests: list[int],
) -> None:
    """With a sitemap lastmod an unchanged page costs no request; without,
    one conditional GET answered 304. Neither reads or extracts anything."""
    state, root = site
    state.sitemap_lastmod = lastmod
    state.put("/handbook/leave", html_page("Leave", "Employees receive 27 vacation days."))
    state.put("/handbook/parking", html_page("Parking", "Visitors park on level P2."))
    config = WebSiteConfig(sitemaps=(f"{root}/sitemap.xml",), delay_seconds=0.0)
    mirror = Mirror(platform, tenant_id, "web", WebSiteConnector(config))

    first = mirror.sync()
    assert (first.seen, first.changed, first.reads) == (2, 2, 2)
    (hit,) = mirror.hits("how many vacation days", "27 vacation days")
    assert hit["filename"] == "leave.html"
    assert hit["citation"]["source_version_id"].startswith("ver_")
    first_version = hit["citation"]["source_version_id"]

    # unchanged: nothing read or extracted
    again = mirror.sync()
    assert (again.seen, again.changed, again.reads) == (2, 0, 0)
    assert state.requests_to("/handbook/leave") == second_pass_requests

    # changed at the source: the new version is served
    state.put("/handbook/leave", html_page("Leave", "Employees receive 31 vacation days."))
    changed = mirror.sync()
    assert (changed.changed, changed.reads) == (1, 1)
    (hit,) = mirror.hits("how many vacation days", "31 vacation days")
    assert hit["citation"]["source_version_id"] != first_version
    assert not mirror.hits("how many vacation days", "27 vacation days")

    # removed from the site (and its sitemap): unsearchable after the next pass
    state.remove("/handbook/leave")
    gone = mirror.sync()
    assert gone.deleted == 1
    assert not mirror.hits("how many vacation days", "vacation days")
    assert mirror.hits("where do visitors park", "P2")


def test_a_git_repository_mirrored_through_its_whole_life(
    platform: Platform, tenant_id: str, tmp_path: Path
) -> None:
    repo = BareRepository(tmp_path)
    repo.write("handbook/leave.md", "# Leave\n\nEmployees receive 27 vacation days.\n")
    repo.write("handbook/parking.md", "# Parking\n\nVisitors park on level P2.\n")
    repo.write("src/tool.py", "print('not a document')\n")
    repo.commit("handbook")
    config = GitRepositoryConfig(str(repo.bare), selection=ItemSelection(include=("*.md",)))
    mirror = Mirror(platform, tenant_id, "git", GitRepositoryConnector(config))

    first = mirror.sync()
    assert (first.seen, first.changed) == (2, 2)
    (hit,) = mirror.hits("how many vacation days", "27 vacation days")
    assert hit["filename"] == "handbook/leave.md"
    first_version = hit["citation"]["source_version_id"]

    # no new commit: the pass lists nothing
    idle = mirror.sync()
    assert (idle.seen, idle.reads) == (0, 0)

    # changed at the source: the new version is served
    repo.put("handbook/leave.md", "# Leave\n\nEmployees receive 31 vacation days.\n")
    changed = mirror.sync()
    assert (changed.seen, changed.changed) == (1, 1)
    (hit,) = mirror.hits("how many vacation days", "31 vacation days")
    assert hit["citation"]["source_version_id"] != first_version
    source_id = hit["source_id"]

    # renamed: the same source, nothing extracted again
    repo.move("handbook/leave.md", "policies/leave.md")
    moved = mirror.sync()
    assert (moved.moved, moved.changed, moved.deleted) == (1, 0, 0)
    (hit,) = mirror.hits("how many vacation days", "31 vacation days")
    assert hit["source_id"] == source_id

    # deleted at the source: unsearchable after the next pass
    repo.remove("policies/leave.md")
    gone = mirror.sync()
    assert gone.deleted == 1
    assert not mirror.hits("how many vacation days", "vacation days")
    assert mirror.hits("where do visitors park", "P2")

    # a permission change (the instance maps handbook/parking.md to group:finance):
    # the next pass lists the tree again under the new scope and re-scopes it, unread
    _, finance = platform.catalog.create_api_key(tenant_id, ["group:finance"], "finance")
    mirror.connector = GitRepositoryConnector(
        GitRepositoryConfig(
            str(repo.bare),
            selection=ItemSelection(include=("*.md",)),
            subjects=SubjectsByPrefix({"handbook/parking": ("group:finance",)}),
        )
    )
    rescoped = mirror.sync()
    assert (rescoped.rescoped, rescoped.reads) == (1, 0)
    assert not mirror.hits("where do visitors park", "P2")
    assert mirror.hits("where do visitors park", "P2", key=finance)


def test_both_kinds_are_added_and_synced_through_the_cli(
    cli_env: None,
    platform: Platform,
    tenant_id: str,
    site: tuple[LoopbackSite, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`groundwork source add --kind web|git` builds through the factory."""
    state, root = site
    state.put("/guide/leave", html_page("Leave", "Employees receive 27 vacation days."))
    repo = BareRepository(tmp_path)
    repo.put("handbook/parking.md", "# Parking\n\nVisitors park on level P2.\n")
    kinds = {
        "site": ("web", {"sitemaps": [f"{root}/sitemap.xml"], "delay_seconds": 0}),
        "repo": ("git", {"url": str(repo.bare), "include": ["*.md"]}),
    }
    for name, (kind, config) in kinds.items():
        args = ["source", "add", tenant_id, name, "--kind", kind, "--config", json.dumps(config)]
        assert main(args) == 0, capsys.readouterr().out
        capsys.readouterr()
        assert main(["source", "sync", tenant_id, name]) == 0
        assert "changed 1" in capsys.readouterr().out
    publish_registered(platform, tenant_id)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    api = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    for query, needle in (("vacation days", "27 vacation"), ("visitors park", "P2")):
        answer = api.post(
            "/v1/search", json={"query": query}, headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200 and needle in answer.text
