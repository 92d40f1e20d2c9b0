"""The fsspec connector over WebDAV end to end, against a real WsgiDAV server
the test starts (testbed/webdav_server.py): added through the CLI, synced,
ingested, searched with a citation naming the file's path; an unchanged pass
reads nothing (the share's ETags), a change is a new version, a deletion is
unsearchable after the next pass. The share asks for a login: the password
is a secret reference, never stored, shown or sent without being asked."""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from groundwork_cli.main import main
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed.webdav_server import WebdavServer
from tests.e2e.helpers import publish_registered, search_hits, source_sync

WEBDAV_PORT = 8351
PASSWORD = secrets.token_urlsafe(16)


@pytest.fixture
def share(tmp_path: Path) -> Iterator[tuple[WebdavServer, Path]]:
    folder = tmp_path / "share"
    server = WebdavServer(tmp_path / "wsgidav", folder, WEBDAV_PORT, password=PASSWORD).start()
    try:
        yield server, folder
    finally:
        server.stop()


@pytest.fixture
def cli_env(cli_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test database (conftest's cli_env) and the share's password by name."""
    monkeypatch.setenv("GW_TEST_DAV_PASSWORD", PASSWORD)


def _sync(tenant_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    return source_sync(tenant_id, "share", capsys)


def _write(path: Path, text: str) -> None:
    """A write seconds older than the next listing: its version settled at once."""
    path.write_text(text)
    past = time.time() - 5
    os.utime(path, (past, past))


@pytest.mark.timeout(180)
def test_a_webdav_share_mirrored_through_its_life(
    cli_env: None,
    platform: Platform,
    tenant_id: str,
    share: tuple[WebdavServer, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, folder = share
    top = f"team-{uuid.uuid4().hex[:8]}"
    (folder / top / "handbook").mkdir(parents=True)
    _write(
        folder / top / "handbook" / "vacation.md",
        "# Leave\n\nEmployees receive 27 vacation days.\n",
    )
    _write(folder / top / "handbook" / "parking.md", "# Parking\n\nVisitors park on P2.\n")
    # the share refuses a request without the login
    refused = httpx.request("PROPFIND", server.base_url + "/", headers={"Depth": "0"})
    assert refused.status_code == 401
    config = {
        "protocol": "webdav",
        "root": f"/{top}",
        "options": {"base_url": server.base_url, "username": server.user},
    }
    added = main(
        [
            "source",
            "add",
            tenant_id,
            "share",
            "--kind",
            "fsspec",
            "--config",
            json.dumps(config),
            "--secret",
            "password=env:GW_TEST_DAV_PASSWORD",
            "--json",
        ]
    )
    shown = capsys.readouterr().out
    assert added == 0, shown
    assert PASSWORD not in shown and json.loads(shown)[0]["secrets"] == ["password"]

    assert "changed 2" in _sync(tenant_id, capsys)
    publish_registered(platform, tenant_id)
    _, staff = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    api = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    hit = search_hits(api, staff, "how many vacation days")[0]
    assert "27" in json.dumps(hit)
    assert hit["citation"]["source_location"] == {"path": "handbook/vacation.md"}
    first_version = hit["citation"]["source_version_id"]

    # unchanged: the share's ETags say so, nothing is read
    assert "reads 0" in _sync(tenant_id, capsys)

    _write(
        folder / top / "handbook" / "vacation.md",
        "# Leave\n\nEmployees receive 31 vacation days from now on.\n",
    )
    assert "changed 1" in _sync(tenant_id, capsys)
    publish_registered(platform, tenant_id)
    hit = search_hits(api, staff, "how many vacation days")[0]
    assert "31" in json.dumps(hit) and hit["citation"]["source_version_id"] != first_version

    # a same-size edit within the second of the last read keeps WsgiDAV's ETag
    # (inode, whole-second mtime, size): an entry that recent is racy, so the
    # pass reads it again (the ETag was trusted, and the edit missed)
    parking = folder / top / "handbook" / "parking.md"
    stamp = int(time.time()) + 10  # one whole second, in the window for both passes
    parking.write_text("# Parking\n\nVisitors park on P3.\n")
    os.utime(parking, (stamp, stamp))
    assert "changed 1" in _sync(tenant_id, capsys)
    parking.write_text("# Parking\n\nVisitors park on P4.\n")  # in place: same inode
    os.utime(parking, (stamp, stamp))
    assert "changed 1" in _sync(tenant_id, capsys)
    publish_registered(platform, tenant_id)
    assert "P4" in json.dumps(search_hits(api, staff, "where do visitors park")[0])

    (folder / top / "handbook" / "vacation.md").unlink()
    assert "deleted 1" in _sync(tenant_id, capsys)
    assert not [
        h for h in search_hits(api, staff, "how many vacation days") if "31" in json.dumps(h)
    ]
    assert main(["source", "remove", tenant_id, "share"]) == 0
