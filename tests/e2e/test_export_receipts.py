"""Export receipts are signed by the render and checked by the save that
attaches the exported file (groundwork.artifact_receipts,
groundwork.artifact_exports.attach_export), against the real catalog and blob
store: a receipt this server did not sign, another kind of token, one issued
for another version, an expired one, one by another format's adapter, and
one whose hashes are not the file's are each refused by name; the export is
left failed with that name (a retry renders again), the file is not attached
and its blob is gone. A valid receipt attaches the file and is answered with
its claims, over HTTP too."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from groundwork import approvals
from groundwork.artifact_exports import attach_export, render_markdown
from groundwork.artifact_receipts import ExportReceipt, new_receipt, sign_receipt
from groundwork.artifacts import ArtifactVersion, NewFile, put_content
from resources.composition.platform import Platform
from retrieval_api.app import create_app
from testbed.tenants import new_tenant
from tests.e2e.test_artifact_lifecycle import _create, _scope

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def setting(platform: Platform) -> dict[str, Any]:
    """A tenant's artifact at generation 1, its version, and a PDF render of it."""
    tenant = new_tenant(platform, "rc")
    artifact = _create(platform, tenant, "markdown")
    [version] = platform.artifacts.versions(_scope(tenant), artifact)
    markdown = platform.blobs.get(version.blob_key).decode()
    rendered, _ = render_markdown(markdown, "pdf", "Plan")
    return {
        "tenant": tenant,
        "artifact": artifact,
        "version": version,
        "data": rendered.data,
    }


def _receipt(setting: dict[str, Any], **changes: Any) -> ExportReceipt:
    version: ArtifactVersion = setting["version"]
    data: bytes = setting["data"]
    honest = new_receipt(
        setting["tenant"],
        setting["artifact"],
        version.generation,
        "pdf",
        version.sha256,
        hashlib.sha256(data).hexdigest(),
        len(data),
        NOW,
    )
    return replace(honest, **changes)


def _attach(platform: Platform, setting: dict[str, Any], token: str) -> dict[str, Any]:
    """Claim the PDF export (a failed one is claimed again), store the render's
    bytes and attach them with `token`."""
    export, claimed = platform.artifacts.claim_export(
        setting["tenant"], setting["artifact"], 1, "pdf"
    )
    assert claimed, export
    key, digest = put_content(platform.blobs, setting["data"])
    file = NewFile("export", "pdf", "application/pdf", key, digest, len(setting["data"]))
    setting["key"] = key
    return attach_export(
        platform.artifacts,
        platform.blobs,
        export,
        setting["version"],
        file,
        token,
        secret=platform.approval_secret(),
        now=NOW,
    )


def _token(platform: Platform, receipt: ExportReceipt) -> str:
    return sign_receipt(platform.approval_secret(), receipt)


Token = Callable[[Platform, dict[str, Any]], str]
REFUSALS = [
    pytest.param("forged", lambda p, s: sign_receipt(b"another key", _receipt(s)), id="forged"),
    pytest.param("malformed", lambda p, s: "not-a-receipt", id="malformed"),
    pytest.param(
        "wrong-kind",
        lambda p, s: approvals.propose(
            p.approval_secret(), s["tenant"], s["artifact"], 1, "digest", "key", NOW
        ),
        id="an-approval-token",
    ),
    pytest.param(
        "wrong-audience", lambda p, s: _token(p, _receipt(s, generation=2)), id="other-version"
    ),
    pytest.param(
        "wrong-audience",
        lambda p, s: _token(p, _receipt(s, artifact_id="art_another")),
        id="other-artifact",
    ),
    pytest.param(
        "wrong-audience",
        lambda p, s: _token(p, _receipt(s, tenant_id="another-tenant")),
        id="other-tenant",
    ),
    pytest.param(
        "expired",
        lambda p, s: _token(p, _receipt(s, expires_at=NOW - timedelta(seconds=1))),
        id="expired",
    ),
    pytest.param(
        "wrong-adapter", lambda p, s: _token(p, _receipt(s, adapter="docx")), id="other-adapter"
    ),
    pytest.param(
        "hash-mismatch",
        lambda p, s: _token(p, _receipt(s, file_sha256="0" * 64)),
        id="other-file-hash",
    ),
    pytest.param(
        "hash-mismatch", lambda p, s: _token(p, _receipt(s, size_bytes=1)), id="other-size"
    ),
    pytest.param(
        "hash-mismatch",
        lambda p, s: _token(p, _receipt(s, source_sha256="1" * 64)),
        id="other-source-content",
    ),
]


@pytest.mark.parametrize(("problem", "token"), REFUSALS)
def test_a_receipt_that_does_not_vouch_for_the_file_is_refused_by_name(
    platform: Platform, setting: dict[str, Any], problem: str, token: Token
) -> None:
    row = _attach(platform, setting, token(platform, setting))
    assert row["state"] == "failed" and row["file_id"] is None, row
    assert f"export receipt refused ({problem})" in row["failure_reason"], row
    assert not platform.blobs.exists(setting["key"])  # the unattached file went
    # the refusal is the export's state, not its end: a good receipt attaches
    good = _attach(platform, setting, _token(platform, _receipt(setting)))
    assert good["state"] == "rendered" and good["file_id"], good
    assert platform.blobs.exists(setting["key"])


def test_a_valid_receipt_attaches_the_file_with_its_claims(
    platform: Platform, setting: dict[str, Any]
) -> None:
    token = _token(platform, _receipt(setting))
    row = _attach(platform, setting, token)
    assert row["state"] == "rendered", row
    receipt = row["receipt"]
    assert receipt["signed"] == token and receipt["adapter"] == "pdf"
    assert receipt["audience"] == f"{setting['tenant']}/{setting['artifact']}/1"
    assert receipt["sha256"] == row_file_sha(platform, setting, row["file_id"])


def row_file_sha(platform: Platform, setting: dict[str, Any], file_id: str) -> str:
    found = platform.artifacts.file(_scope(setting["tenant"]), file_id)
    assert found is not None
    return found.sha256


def test_an_export_over_http_answers_its_signed_receipt(platform: Platform) -> None:
    tenant = new_tenant(platform, "rh")
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "receipts")
    headers = {"Authorization": f"Bearer {key}"}
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    made = client.post(
        "/v1/artifacts",
        json={
            "path": "plain.md",
            "markdown": "# Plain\n\nA body to export.\n",
            "provenance": {"tool": "t", "inputs": {}, "run": "r"},
        },
        headers=headers,
    )
    assert made.status_code == 201, made.text
    for fmt in ("docx", "html"):  # read back, and not: both signed
        exported = client.post(
            f"/v1/artifacts/{made.json()['artifact_id']}/exports",
            json={"generation": 1, "format": fmt},
            headers=headers,
        ).json()
        assert exported["state"] == "rendered", exported
        receipt = exported["receipt"]
        assert receipt["adapter"] == fmt and receipt["sha256"] == exported["file"]["sha256"]
        assert receipt["size_bytes"] == exported["file"]["size_bytes"] and receipt["signed"]
