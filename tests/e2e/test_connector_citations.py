"""A citation names where a connector found the cited version (issue #34):
the Git commit and path, the web page's URL. Through the sync service, the
real engines, the HTTP search, the citation resolver and the search tool, on
the bare repository and loopback site the connector tests use. An upload's
citation carries an empty location."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwork.connectors.git import GitRepositoryConfig
from groundwork.connectors.s3_bucket import S3BucketSettings
from groundwork.connectors.selection import ItemSelection
from groundwork.connectors.web import WebSiteConfig
from groundwork.tools.dispatch import ToolDispatcher
from resources.composition.platform import Platform
from resources.connectors.fsspec_files import FsspecConnector
from resources.connectors.git_repository import GitRepositoryConnector
from resources.connectors.s3_bucket import S3BucketConnector
from resources.connectors.web_site import WebSiteConnector
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.git_repository import BareRepository
from testbed.web_site import LoopbackSite, html_page
from tests.conftest import TEST_S3_BUCKET
from tests.e2e.helpers import publish_registered
from tests.e2e.test_web_and_git_connectors import Mirror
from tests.loopback_http import loopback_server


def _cited(mirror: Mirror, query: str, needle: str) -> dict[str, Any]:
    (hit,) = mirror.hits(query, needle)
    citation: dict[str, Any] = hit["citation"]
    return {**citation, "citation_id": hit["citation_id"]}


def _tool_citation(platform: Platform, mirror: Mirror, query: str, needle: str) -> dict[str, Any]:
    who = platform.catalog.principal_for_key(mirror.key)
    assert who is not None
    result = ToolDispatcher(lambda: platform).call(who, "search_files", {"query": query})
    assert result.ok, result.payload
    (hit,) = [h for h in result.payload["hits"] if needle in h["untrusted_text"]]
    citation: dict[str, Any] = hit["citation"]
    return citation


def _resolved(mirror: Mirror, citation_id: str) -> dict[str, Any]:
    answer = mirror.api.get(
        f"/v1/citations/{citation_id}", headers={"Authorization": f"Bearer {mirror.key}"}
    )
    assert answer.status_code == 200, answer.text
    citation: dict[str, Any] = answer.json()["citation"]
    return citation


def test_a_git_citation_names_the_commit_and_path_of_its_version(
    platform: Platform, tenant_id: str, tmp_path: Path
) -> None:
    repo = BareRepository(tmp_path)
    repo.write("handbook/leave.md", "# Leave\n\nEmployees receive 27 vacation days.\n")
    repo.write("handbook/parking.md", "# Parking\n\nVisitors park on level P2.\n")
    first_commit = repo.commit("handbook")
    config = GitRepositoryConfig(str(repo.bare), selection=ItemSelection(include=("*.md",)))
    mirror = Mirror(platform, tenant_id, "git", GitRepositoryConnector(config))

    mirror.sync()
    first = _cited(mirror, "how many vacation days", "27 vacation days")
    where = {"commit": first_commit, "path": "handbook/leave.md", "branch": "main"}
    assert first["source_location"] == where
    assert _tool_citation(platform, mirror, "how many vacation days", "27")["source_location"] == (
        where
    )

    # changed at the source: the new version names the new commit
    second_commit = repo.put(
        "handbook/leave.md", "# Leave\n\nEmployees receive 31 vacation days.\n"
    )
    mirror.sync()
    second = _cited(mirror, "how many vacation days", "31 vacation days")
    assert second["source_location"]["commit"] == second_commit != first_commit
    assert second["source_location"]["path"] == "handbook/leave.md"
    # the first citation is a snapshot: it still names the commit its text came from
    assert _resolved(mirror, first["citation_id"])["source_location"]["commit"] == first_commit

    # an unchanged file keeps the commit its bytes were registered at
    parking = _cited(mirror, "where do visitors park", "P2")
    assert parking["source_location"]["commit"] == first_commit
    assert parking["source_location"]["path"] == "handbook/parking.md"

    # moved with the same bytes: kept as its source (nothing extracted again), so
    # its citation still names the commit and path those bytes were read at,
    # which still resolve to them
    repo.move("handbook/parking.md", "places/parking.md")
    assert mirror.sync().moved == 1
    assert _cited(mirror, "where do visitors park", "P2")["source_location"] == {
        "commit": first_commit,
        "path": "handbook/parking.md",
        "branch": "main",
    }

    # moved and rewritten in one commit: a new version, cited at its new path
    (repo.work / "policies").mkdir()
    repo.git("mv", "handbook/leave.md", "policies/leave.md")
    repo.write("policies/leave.md", "# Leave policy\n\nStaff now receive 33 vacation days.\n")
    third_commit = repo.commit("move and rewrite")
    mirror.sync()
    third = _cited(mirror, "how many vacation days", "33 vacation days")
    assert third["source_location"]["commit"] == third_commit
    assert third["source_location"]["path"] == "policies/leave.md"


def test_a_path_that_would_forge_its_citation_is_left_out_of_it(
    platform: Platform, tenant_id: str, tmp_path: Path
) -> None:
    """A right-to-left override in a file name reorders what a reader of the
    citation sees: the file is registered and cited, by commit without the path."""
    repo = BareRepository(tmp_path)
    repo.write("notes/invoice\u202etxt.md", "# Invoice\n\nThe invoice total is 4,210 euros.\n")
    commit = repo.commit("odd name")
    config = GitRepositoryConfig(str(repo.bare), selection=ItemSelection(include=("*.md",)))
    mirror = Mirror(platform, tenant_id, "git", GitRepositoryConnector(config))

    mirror.sync()
    cited = _cited(mirror, "invoice total", "4,210 euros")
    assert cited["source_location"] == {"commit": commit, "branch": "main"}


@pytest.fixture
def site() -> Iterator[tuple[LoopbackSite, str]]:
    state = LoopbackSite()
    with loopback_server(state.handler()) as root:
        yield state, root


def test_a_web_citation_names_the_page_url(
    platform: Platform, tenant_id: str, site: tuple[LoopbackSite, str]
) -> None:
    state, root = site
    state.put("/handbook/leave", html_page("Leave", "Employees receive 27 vacation days."))
    config = WebSiteConfig(sitemaps=(f"{root}/sitemap.xml",), delay_seconds=0.0)
    mirror = Mirror(platform, tenant_id, "web", WebSiteConnector(config))

    mirror.sync()
    cited = _cited(mirror, "how many vacation days", "27 vacation days")
    assert cited["source_location"] == {"url": f"{root}/handbook/leave", "filename": "leave.html"}
    assert _resolved(mirror, cited["citation_id"])["source_location"]["url"] == (
        f"{root}/handbook/leave"
    )
    tool = _tool_citation(platform, mirror, "how many vacation days", "27 vacation days")
    assert tool["source_location"]["url"] == f"{root}/handbook/leave"


def test_an_s3_citation_names_the_bucket_and_key(
    platform: Platform, tenant_id: str, seaweedfs: EmbeddedSeaweedFS
) -> None:
    s3 = seaweedfs.client()
    prefix = f"cite-{uuid.uuid4().hex[:8]}/"
    key = f"{prefix}handbook/leave.md"
    body = b"# Leave\n\nEmployees receive 27 vacation days.\n"
    s3.put_object(Bucket=TEST_S3_BUCKET, Key=key, Body=io.BytesIO(body))
    connector = S3BucketConnector(s3, S3BucketSettings(TEST_S3_BUCKET, prefix=prefix))
    mirror = Mirror(platform, tenant_id, "s3", connector)

    mirror.sync()
    cited = _cited(mirror, "how many vacation days", "27 vacation days")
    assert cited["source_location"] == {
        "bucket": TEST_S3_BUCKET,
        "key": key,
        "filename": "handbook/leave.md",
    }


def test_a_folder_citation_names_the_path_below_its_root(
    platform: Platform, tenant_id: str, tmp_path: Path
) -> None:
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "leave.md").write_text(
        "# Leave\n\nEmployees receive 27 vacation days.\n"
    )
    mirror = Mirror(platform, tenant_id, "fsspec", FsspecConnector("file", str(tmp_path)))

    mirror.sync()
    cited = _cited(mirror, "how many vacation days", "27 vacation days")
    assert cited["source_location"] == {"path": "handbook/leave.md"}


def test_an_uploaded_files_citation_has_an_empty_location(
    platform: Platform, tenant_id: str
) -> None:
    mirror = Mirror(platform, tenant_id, "web", WebSiteConnector(WebSiteConfig()))
    answer = mirror.api.post(
        "/v1/sources",
        params={"filename": "leave.md"},
        content=b"# Leave\n\nEmployees receive 27 vacation days.\n",
        headers={"Authorization": f"Bearer {mirror.key}"},
    )
    assert answer.status_code in (200, 201, 202), answer.text
    publish_registered(platform, tenant_id)
    cited = _cited(mirror, "how many vacation days", "27 vacation days")
    assert cited["source_location"] == {}
    assert _resolved(mirror, cited["citation_id"])["source_location"] == {}
