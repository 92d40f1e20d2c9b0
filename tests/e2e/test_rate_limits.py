"""Fair under load: per-key and per-tenant rate limits (token buckets; HTTP 429
with Retry-After, the tools refused with the same code over HTTP and MCP) and
per-tenant quotas (documents, bytes: refused naming the limit before a byte is
stored), set by the CLI and the admin route; no limit unless set."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from groundwork.catalog import TenantLimits
from groundwork.services.limits import change_limits
from groundwork.stages.registration import blob_key_for
from groundwork.tools.dispatch import ToolDispatcher
from groundwork_cli.main import main
from resources.composition.platform import Platform
from resources.composition.settings import GroundworkSettings
from retrieval_api.app import create_app
from tests.conftest import TEST_DATABASE


@pytest.fixture
def client(platform: Platform) -> TestClient:
    return TestClient(create_app(lambda: platform), raise_server_exceptions=False)


def _key(platform: Platform, tenant_id: str, scopes: list[str] | None = None) -> dict[str, str]:
    _, secret = platform.catalog.create_api_key(
        tenant_id, [f"tenant:{tenant_id}"], "limits", scopes or ["files:read", "files:write"]
    )
    return {"Authorization": f"Bearer {secret}"}


def test_a_key_over_its_rate_gets_429_with_retry_after_and_succeeds_after_the_wait(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    change_limits(platform, tenant_id, {"key_requests_per_second": 1, "key_burst": 2})
    flooding, other = _key(platform, tenant_id), _key(platform, tenant_id)
    assert [client.get("/v1/files", headers=flooding).status_code for _ in range(2)] == [200, 200]
    refused = client.get("/v1/files", headers=flooding)
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "1"
    body = refused.json()
    assert body["error"] == "rate_limited" and body["limit"] == "key_requests_per_second"
    assert body["retry_after_seconds"] == 1 and body["alternative"]
    # the tools over HTTP are the same request path: refused the same way
    tool = client.post("/v1/tools/list_files", json={}, headers=flooding)
    assert tool.status_code == 429 and tool.json()["error"] == "rate_limited"
    # a per-key rate: the tenant's other key is not held back by this one
    assert client.get("/v1/files", headers=other).status_code == 200
    time.sleep(int(refused.headers["Retry-After"]))
    assert client.get("/v1/files", headers=flooding).status_code == 200
    assert client.get("/v1/health").json()["rate_limits"]["refused"] >= 2


def test_a_tenant_rate_holds_across_its_keys_and_not_for_other_tenants(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    change_limits(platform, tenant_id, {"requests_per_second": 0.5, "burst": 2})
    one, two = _key(platform, tenant_id), _key(platform, tenant_id)
    assert client.get("/v1/files", headers=one).status_code == 200
    assert client.get("/v1/files", headers=two).status_code == 200
    refused = client.get("/v1/files", headers=one)
    assert refused.status_code == 429 and refused.json()["limit"] == "requests_per_second"
    assert refused.headers["Retry-After"] == "2"
    other_tenant = "t-other-" + tenant_id[2:]
    platform.catalog.ensure_tenant(other_tenant, other_tenant, platform.settings.default_model_key)
    unlimited = _key(platform, other_tenant)
    assert all(client.get("/v1/files", headers=unlimited).status_code == 200 for _ in range(10)), (
        "a tenant without limits is never limited"
    )


def test_the_mcp_path_refuses_with_the_same_code(platform: Platform, tenant_id: str) -> None:
    change_limits(platform, tenant_id, {"key_requests_per_second": 0.2, "key_burst": 1})
    _, secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "mcp")
    dispatcher = ToolDispatcher(lambda: platform)  # what agent_tools.mcp_server calls
    found = dispatcher.authenticate(secret)
    assert found is not None
    assert dispatcher.call_admitted(found, "list_files", {}).ok
    refused = dispatcher.call_admitted(found, "list_files", {})
    assert not refused.ok and refused.payload["error"] == "rate_limited"
    assert refused.payload["details"]["retry_after_seconds"] == 5
    assert refused.payload["details"]["limit"] == "key_requests_per_second"


def test_over_quota_registration_is_refused_naming_the_limit_and_nothing_is_stored(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    headers = _key(platform, tenant_id)
    change_limits(platform, tenant_id, {"max_documents": 1, "max_bytes": 100})
    first = b"# One\n\nthe first document\n"
    assert (
        client.post(
            "/v1/sources", params={"filename": "one.md"}, content=first, headers=headers
        ).status_code
        == 201
    )
    second = b"# Two\n\nthe second document, over the documents quota\n"
    refused = client.post(
        "/v1/sources", params={"filename": "two.md"}, content=second, headers=headers
    )
    assert refused.status_code == 413, refused.text
    body = refused.json()
    assert body["error"] == "quota_exceeded" and body["limit"] == "max_documents"
    assert "max_documents" in body["message"] and body["limit_value"] == 1
    assert not platform.blobs.exists(blob_key_for(hashlib.sha256(second).hexdigest()))
    usage = platform.catalog.storage_usage(tenant_id)
    assert (usage.documents, usage.bytes) == (1, len(first))
    assert [f["filename"] for f in client.get("/v1/files", headers=headers).json()["files"]] == [
        "one.md"
    ]

    # a new version of the same source adds bytes, not a document: the bytes quota names itself
    bigger = b"# One\n\n" + b"more words " * 20
    refused = client.post(
        "/v1/sources",
        params={"filename": "one.md", "replace_existing": "true"},
        content=bigger,
        headers=headers,
    )
    assert refused.status_code == 413 and refused.json()["limit"] == "max_bytes"
    assert not platform.blobs.exists(blob_key_for(hashlib.sha256(bigger).hexdigest()))

    # an upload session over the quota is refused when it is opened, before any byte
    change_limits(platform, tenant_id, {"max_documents": None})
    opened = client.post(
        "/v1/uploads",
        json={"filename": "big.md", "size": 500, "media_type": "text/markdown"},
        headers=headers,
    )
    assert opened.status_code == 413 and opened.json()["limit"] == "max_bytes", opened.text
    assert platform.catalog.storage_usage(tenant_id).documents == 1


def test_the_cli_sets_and_shows_a_tenants_limits(
    cli_env: None, platform: Platform, tenant_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tenant", "limits", tenant_id]) == 0
    assert "requests_per_second: no limit" in capsys.readouterr().out
    assert (
        main(
            [
                "tenant",
                "limits",
                tenant_id,
                "--requests-per-second",
                "5",
                "--burst",
                "10",
                "--max-documents",
                "3",
                "--max-bytes",
                "1000",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "requests_per_second: 5.0" in out and "max_bytes: 1000" in out
    tenant = platform.catalog.get_tenant(tenant_id)
    assert tenant is not None
    assert tenant.limits == TenantLimits(5.0, 10, None, None, 3, 1000)
    assert main(["tenant", "limits", tenant_id, "--burst", "none"]) == 0  # clears one, keeps others
    tenant = platform.catalog.get_tenant(tenant_id)
    assert tenant is not None and tenant.limits == TenantLimits(5.0, None, None, None, 3, 1000)
    assert main(["tenant", "limits", tenant_id, "--burst", "0"]) == 1
    assert "burst must be" in capsys.readouterr().out
    assert main(["tenant", "limits", "t-no-such-tenant", "--burst", "3"]) == 1


def test_the_admin_route_sets_and_reads_limits_with_an_operators_key_only(
    client: TestClient, platform: Platform, tenant_id: str
) -> None:
    operators = "t-ops-" + tenant_id[2:]
    platform.catalog.ensure_tenant(operators, operators, platform.settings.default_model_key)
    operator = _key(platform, operators, ["platform:admin"])
    customer = _key(platform, tenant_id, ["files:read", "files:write", "sources:admin"])
    url = f"/v1/admin/tenants/{tenant_id}/limits"

    refused = client.put(url, json={"max_documents": 10**6}, headers=customer)
    assert refused.status_code == 403 and refused.json()["needed_scope"] == "platform:admin"
    assert client.get(url, headers=customer).status_code == 403

    put = client.put(url, json={"requests_per_second": 50, "max_documents": 7}, headers=operator)
    assert put.status_code == 200, put.text
    assert put.json()["limits"]["requests_per_second"] == 50.0
    assert put.json()["limits"]["max_documents"] == 7 and put.json()["limits"]["burst"] is None
    cleared = client.put(url, json={"max_documents": None}, headers=operator).json()
    assert cleared["limits"]["max_documents"] is None
    assert cleared["limits"]["requests_per_second"] == 50.0
    got = client.get(url, headers=operator).json()
    assert got["tenant_id"] == tenant_id and got["usage"] == {"documents": 0, "bytes": 0}
    # the tenant sees its own limits (the tenant view)
    own = client.get("/v1/limits", headers=customer).json()
    assert own["limits"]["requests_per_second"] == 50.0
    assert client.put(url, json={"burst": 0}, headers=operator).status_code == 422
    missing = client.get("/v1/admin/tenants/t-no-such-tenant/limits", headers=operator)
    assert missing.status_code == 404


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(platform: Platform, settings: GroundworkSettings, index_prefix: str) -> Iterator[str]:
    """The API as it is served (uvicorn, one process) on loopback, on the test database."""
    port = _free_port()
    env = {
        **os.environ,
        "GROUNDWORK_DATABASE_NAME": TEST_DATABASE,
        "GROUNDWORK_INDEX_PREFIX": index_prefix,
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "retrieval_api.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v1/health", timeout=5).status_code in (200, 503):
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the API did not start")
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


#: a flooder: N threads sending GET /v1/files back to back, ignoring Retry-After;
#: prints each status when terminated
FLOOD = """
import signal, sys, threading, httpx
base, auth, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
codes, stop = [], threading.Event()
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
def run():
    with httpx.Client(base_url=base, headers={"Authorization": auth}, timeout=10) as c:
        while not stop.is_set():
            codes.append(c.get("/v1/files").status_code)
threads = [threading.Thread(target=run) for _ in range(n)]
for t in threads: t.start()
signal.sigwait([signal.SIGTERM])
stop.set()
for t in threads: t.join()
print(" ".join(map(str, codes)))
"""


def _p95(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.95) - 1]


def test_another_tenant_is_unaffected_while_one_floods(
    served: str, platform: Platform, tenant_id: str
) -> None:
    """One tenant (limited to 0.5/s) floods from four connections; another tenant's
    p95 stays within 1.5x of its unloaded value, because the flood is refused
    at the door (429) instead of taking the server's threads."""
    flooder = f"t-flood-{tenant_id[2:]}"
    platform.catalog.ensure_tenant(flooder, flooder, platform.settings.default_model_key)
    change_limits(platform, flooder, {"requests_per_second": 0.5, "burst": 1})
    flood_headers, quiet_headers = _key(platform, flooder), _key(platform, tenant_id)
    quiet = httpx.Client(base_url=served, headers=quiet_headers, timeout=10)

    def timed(n: int) -> list[float]:
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            assert quiet.get("/v1/files").status_code == 200
            samples.append(time.perf_counter() - start)
        return samples

    timed(20)  # warm: the tenant's view, the pool's connections
    # the flood comes from its own process, as it would from another client;
    # stopped and continued in turns, so both phases share the machine's noise
    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, served, flood_headers["Authorization"], "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    unloaded_samples: list[float] = []
    loaded_samples: list[float] = []
    time.sleep(1.0)
    # 200 samples a phase: the p95 of 80 (its 4th-slowest sample) moved with one
    # scheduler hiccup on this two-core machine and failed a clean-clone run once
    for _ in range(8):
        flood.send_signal(signal.SIGSTOP)
        time.sleep(0.3)  # its held requests answered
        unloaded_samples += timed(25)
        flood.send_signal(signal.SIGCONT)
        time.sleep(0.3)
        loaded_samples += timed(25)
    flood.terminate()
    out, _ = flood.communicate(timeout=20)
    quiet.close()
    unloaded, loaded = _p95(unloaded_samples), _p95(loaded_samples)
    outcomes = [int(code) for code in out.split()]
    refused = outcomes.count(429)
    print(
        f"quiet tenant p95 unloaded {unloaded * 1000:.1f} ms, while flooded "
        f"{loaded * 1000:.1f} ms; flood {len(outcomes)} requests, {refused} refused (429)"
    )
    assert refused > len(outcomes) / 2, "the flood was not limited"
    assert loaded <= 1.5 * unloaded
