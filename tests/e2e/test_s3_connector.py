"""The S3 connector end to end, against the test SeaweedFS: added through the
CLI with its credentials as references, synced, ingested, searched with a
citation; then a change, a deletion and a permission change at the source,
each mirrored by the next pass."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from groundwork_cli.main import main
from resources.composition.platform import Platform
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from retrieval_api.app import create_app
from tests.conftest import TEST_S3_BUCKET
from tests.e2e.helpers import publish_registered, search_hits, source_sync

TAG = "groundwork-subjects"


@pytest.fixture
def cli_env(cli_env: None, monkeypatch: pytest.MonkeyPatch, seaweedfs: EmbeddedSeaweedFS) -> None:
    """The test database (conftest's cli_env) and the bucket's credentials by name."""
    monkeypatch.setenv("GW_TEST_S3_KEY_ID", seaweedfs.credentials.access_key_id)
    monkeypatch.setenv("GW_TEST_S3_SECRET", seaweedfs.credentials.secret_access_key)


def _put(client: Any, key: str, text: str, subjects: str | None = None) -> None:
    extra = {"Tagging": f"{TAG}={subjects}"} if subjects else {}
    client.put_object(Bucket=TEST_S3_BUCKET, Key=key, Body=io.BytesIO(text.encode()), **extra)


def _sync(tenant_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    return source_sync(tenant_id, "docs", capsys)


def test_an_s3_bucket_mirrored_through_its_whole_life(
    cli_env: None,
    platform: Platform,
    tenant_id: str,
    seaweedfs: EmbeddedSeaweedFS,
    capsys: pytest.CaptureFixture[str],
) -> None:
    s3 = seaweedfs.client()
    prefix = f"e2e-{uuid.uuid4().hex[:8]}/"
    _put(s3, f"{prefix}handbook/vacation.md", "# Leave\n\nEmployees receive 27 vacation days.\n")
    _put(s3, f"{prefix}handbook/parking.md", "# Parking\n\nVisitors park on level P2.\n")
    _put(s3, f"{prefix}skip.tmp", "not selected")
    config = {
        "bucket": TEST_S3_BUCKET,
        "prefix": prefix,
        "endpoint": seaweedfs.endpoint,
        "include": ["*.md"],
        "subjects_tag": TAG,
    }
    added = main(
        [
            "source",
            "add",
            tenant_id,
            "docs",
            "--kind",
            "s3",
            "--config",
            json.dumps(config),
            "--secret",
            "access_key_id=env:GW_TEST_S3_KEY_ID",
            "--secret",
            "secret_access_key=env:GW_TEST_S3_SECRET",
            "--json",
        ]
    )
    shown = capsys.readouterr().out
    assert added == 0, shown
    assert seaweedfs.credentials.secret_access_key not in shown
    assert json.loads(shown)[0]["secrets"] == ["access_key_id", "secret_access_key"]

    assert "changed 2" in _sync(tenant_id, capsys)
    publish_registered(platform, tenant_id)
    _, staff = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "staff")
    _, finance = platform.catalog.create_api_key(tenant_id, ["group:finance"], "finance")
    api = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    hit = search_hits(api, staff, "how many vacation days")[0]
    assert "27 vacation days" in hit["untrusted_text"] or "27" in json.dumps(hit)
    assert hit["citation"]["source_version_id"].startswith("ver_")
    first_version = hit["citation"]["source_version_id"]

    # unchanged: a pass reads nothing
    assert "reads 0" in _sync(tenant_id, capsys)

    # changed at the source: the new version is served
    _put(s3, f"{prefix}handbook/vacation.md", "# Leave\n\nEmployees receive 31 vacation days.\n")
    assert "changed 1" in _sync(tenant_id, capsys)
    publish_registered(platform, tenant_id)
    hit = search_hits(api, staff, "how many vacation days")[0]
    assert "31" in json.dumps(hit) and hit["citation"]["source_version_id"] != first_version

    # a permission change at the source (the object's tag): re-scoped, no read
    s3.put_object_tagging(
        Bucket=TEST_S3_BUCKET,
        Key=f"{prefix}handbook/parking.md",
        Tagging={"TagSet": [{"Key": TAG, "Value": "group:finance"}]},
    )
    out = _sync(tenant_id, capsys)
    assert "rescoped 1" in out and "reads 0" in out
    assert not [h for h in search_hits(api, staff, "visitors park level") if "P2" in json.dumps(h)]
    assert [h for h in search_hits(api, finance, "visitors park level") if "P2" in json.dumps(h)]

    # deleted at the source: unsearchable after the next pass
    s3.delete_object(Bucket=TEST_S3_BUCKET, Key=f"{prefix}handbook/vacation.md")
    assert "deleted 1" in _sync(tenant_id, capsys)
    assert not [
        h for h in search_hits(api, staff, "how many vacation days") if "31" in json.dumps(h)
    ]

    assert main(["source", "list", tenant_id, "--json"]) == 0
    state = json.loads(capsys.readouterr().out)[0]
    assert state["deleted"] == 1 and state["items"] == 1 and state["behind"] is False
    assert main(["source", "remove", tenant_id, "docs"]) == 0
    assert "1 documents deleted" in capsys.readouterr().out
