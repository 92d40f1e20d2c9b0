"""`groundwork upload` against a real API server: progress, and resuming an
interrupted upload from the server's acknowledged offset."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import httpx
import pytest

from groundwork_cli.main import main
from resources.composition.platform import Platform
from testbed import documents as make
from testbed.api_server import serve_api
from tests.conftest import TEST_DATABASE


@pytest.fixture(scope="module")
def api(platform: Platform, index_prefix: str):  # type: ignore[no-untyped-def]
    with serve_api(18099, TEST_DATABASE, index_prefix) as base:
        yield base


def test_upload_resumes_from_the_acknowledged_offset(
    api: str, platform: Platform, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = f"c-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "cli")
    file = tmp_path / "review.pdf"
    file.write_bytes(make.report_pdf(pages=3))
    size = file.stat().st_size
    headers = {"Authorization": f"Bearer {key}"}
    # an earlier run that was interrupted after its first part
    created = httpx.post(
        f"{api}/v1/uploads", json={"filename": "review.pdf", "size": size}, headers=headers
    ).json()
    httpx.put(
        f"{api}/v1/uploads/{created['upload_id']}",
        params={"offset": 0},
        content=file.read_bytes()[:700],
        headers=headers,
    )
    state = platform.settings.home / "upload-state.json"
    fingerprint = f"{file.resolve()}|{size}|{file.stat().st_mtime_ns}"
    previous = json.loads(state.read_text()) if state.exists() else {}
    state.write_text(json.dumps({**previous, fingerprint: created["upload_id"]}))
    assert main(["upload", str(file), "--key", key, "--api", api]) == 0
    out = capsys.readouterr().out
    assert "resuming review.pdf at byte 700" in out and "uploaded review.pdf: source src_" in out
    done = httpx.get(f"{api}/v1/uploads/{created['upload_id']}", headers=headers).json()
    assert done["state"] == "completed" and done["received"] == size
    assert fingerprint not in json.loads(state.read_text())
    assert os.environ.get("GROUNDWORK_HOME")  # the CLI ran against the test home
