"""A registration through the API asks Dagster for the tenant's ingest run at
once (no wait for the pending-work sensor's next pass), through Dagster's own
GraphQL client against a real webserver; a burst of registrations queues one
run; with no orchestrator, or one that does not answer, the outcome says so
and the registration still succeeds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import httpx
import pytest
import yaml
from fastapi.testclient import TestClient

from groundwork.ports import IngestAlreadyQueued, IngestNotRequested, IngestRequested
from resources.composition.platform import Platform
from resources.orchestration.ingest_trigger import DagsterIngestTrigger, NoIngestTrigger
from retrieval_api.app import create_app
from tests.conftest import PROJECT_ROOT


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def dagster_webserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A real Dagster webserver over the project's code location, with the run
    queue the platform uses (no daemon: submitted runs stay queued)."""
    home = tmp_path_factory.mktemp("dagster-home")
    (home / "dagster.yaml").write_text(
        yaml.safe_dump(
            {
                "telemetry": {"enabled": False},
                "run_coordinator": {
                    "module": "dagster.core.run_coordinator",
                    "class": "QueuedRunCoordinator",
                },
            }
        )
    )
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster-webserver"),
            "-w",
            str(PROJECT_ROOT / "workspace.yaml"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        process.kill()
        raise RuntimeError("the Dagster webserver did not start")
    try:
        yield url, home
    finally:
        process.terminate()
        process.wait(30)


def _queued_runs(home: Path, tenant: str) -> list[dg.DagsterRun]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": tenant})))


def test_the_dagster_trigger_queues_one_run_per_tenant_burst(
    dagster_webserver: tuple[str, Path],
) -> None:
    url, home = dagster_webserver
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    trigger = DagsterIngestTrigger(url)
    first = trigger.request_ingest(tenant)
    assert isinstance(first, IngestRequested), first
    again = trigger.request_ingest(tenant)
    assert again == IngestAlreadyQueued(first.run_id)
    runs = _queued_runs(home, tenant)
    assert [r.run_id for r in runs] == [first.run_id]
    assert runs[0].job_name == "tenant_ingest"
    assert runs[0].status == dg.DagsterRunStatus.QUEUED


def test_a_new_tenants_run_has_its_partition_before_it_starts(
    dagster_webserver: tuple[str, Path],
) -> None:
    """A tenant seen first by the inbox watcher (a new folder) or the API has
    no `tenant` partition until a sensor's next pass adds it: a run submitted
    before then failed at its first output ("Nonexistent partition keys"),
    measured under `groundwork up` with 99 new folders. The trigger adds the
    partition first (once; adding it again is no error)."""
    url, home = dagster_webserver
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    trigger = DagsterIngestTrigger(url)
    first = trigger.request_ingest(tenant)
    assert isinstance(first, IngestRequested), first
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.has_dynamic_partition("tenant", tenant)
        instance.delete_run(first.run_id)
    # another process (a second API worker) asks again: already there is fine
    again = DagsterIngestTrigger(url).request_ingest(tenant)
    assert isinstance(again, IngestRequested), again


def test_a_remembered_run_that_was_deleted_does_not_block_the_next_request(
    dagster_webserver: tuple[str, Path],
) -> None:
    """The trigger remembers each tenant's queued run; once that run is gone
    (deleted from the UI), the next registration must still get a run."""
    url, home = dagster_webserver
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    trigger = DagsterIngestTrigger(url)
    first = trigger.request_ingest(tenant)
    assert isinstance(first, IngestRequested), first
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.delete_run(first.run_id)
    again = trigger.request_ingest(tenant)
    assert isinstance(again, IngestRequested), again
    assert again.run_id != first.run_id
    assert [r.run_id for r in _queued_runs(home, tenant)] == [again.run_id]


def test_no_orchestrator_is_an_outcome_not_an_error() -> None:
    assert isinstance(NoIngestTrigger().request_ingest("acme"), IngestNotRequested)
    silent = DagsterIngestTrigger(f"http://127.0.0.1:{_free_port()}", timeout=2)
    outcome = silent.request_ingest("acme")
    assert isinstance(outcome, IngestNotRequested) and "did not accept" in outcome.reason


def test_an_api_upload_queues_its_tenants_ingest_run(
    platform: Platform, dagster_webserver: tuple[str, Path]
) -> None:
    url, home = dagster_webserver
    tenant = f"u-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "trigger test")
    platform._trigger = DagsterIngestTrigger(url)  # what the supervisor configures
    try:
        client = TestClient(create_app(lambda: platform))
        headers = {"Authorization": f"Bearer {key}"}
        data = b"# Notes\n\nThe trigger marker is zq-trigger.\n"
        created = client.post(
            "/v1/uploads",
            json={"filename": "notes.md", "size": len(data), "media_type": "text/markdown"},
            headers=headers,
        ).json()
        upload_id = created["upload_id"]
        client.put(
            f"/v1/uploads/{upload_id}", params={"offset": 0}, content=data, headers=headers
        ).raise_for_status()
        done = client.post(f"/v1/uploads/{upload_id}/complete", json={}, headers=headers)
        assert done.status_code == 200, done.text
        runs = _queued_runs(home, tenant)
        assert len(runs) == 1 and runs[0].job_name == "tenant_ingest"
        assert runs[0].tags["groundwork/trigger"] == "registration"
    finally:
        platform._trigger = None
