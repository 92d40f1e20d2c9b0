"""Compute logs in the object store (issue #32: no worker host needs a shared
disk): a step's stdout and stderr written on one "host" (a Dagster instance
with its own local folder) are read on another (a fresh instance, another
empty folder) from the real S3-compatible server, through the dagster.yaml
block the supervisor writes; the secrets stay environment variable names."""

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest
from dagster import OpExecutionContext

from resources.composition.platform import EngineEndpoints
from resources.composition.settings import GroundworkSettings
from resources.dagster_glue.instance import write_instance_config
from resources.dagster_glue.object_compute_logs import (
    ACCESS_KEY_ENV,
    SECRET_KEY_ENV,
    compute_logs_for,
)
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from tests.conftest import TEST_S3_BUCKET, settings_on_seaweedfs


@dg.op
def say_hello(context: OpExecutionContext) -> None:
    print(f"hello from {context.run_id}")  # noqa: T201 - the step's stdout is the subject
    context.log.info("logged too")


@dg.job
def hello_job() -> None:
    say_hello()


@pytest.fixture
def s3_settings(
    settings: GroundworkSettings, seaweedfs: EmbeddedSeaweedFS, monkeypatch: pytest.MonkeyPatch
) -> GroundworkSettings:
    credentials = seaweedfs.credentials
    monkeypatch.setenv(ACCESS_KEY_ENV, credentials.access_key_id)
    monkeypatch.setenv(SECRET_KEY_ENV, credentials.secret_access_key)
    return settings_on_seaweedfs(settings, seaweedfs, "compute-logs")


def _instance(home: Path, server_url: str, settings: GroundworkSettings) -> dg.DagsterInstance:
    write_instance_config(home, server_url, compute_logs=compute_logs_for(settings))
    return dg.DagsterInstance.from_config(str(home))


@pytest.fixture
def hosts() -> Iterator[tuple[Path, Path]]:
    with (
        tempfile.TemporaryDirectory(prefix="gw-logs-a-") as a,
        tempfile.TemporaryDirectory(prefix="gw-logs-b-") as b,
    ):
        yield Path(a), Path(b)


def test_a_step_log_written_on_one_host_is_read_on_another(
    s3_settings: GroundworkSettings,
    seaweedfs: EmbeddedSeaweedFS,
    engines: EngineEndpoints,
    hosts: tuple[Path, Path],
) -> None:
    server_url = engines.server_url
    worker_home, ui_home = hosts
    worker = _instance(worker_home, server_url, s3_settings)
    text = (worker_home / "dagster.yaml").read_text()
    assert "ObjectStoreComputeLogs" in text
    assert str(s3_settings.s3_secret_access_key) not in text  # named, never written
    assert ACCESS_KEY_ENV in text and SECRET_KEY_ENV in text

    result = dg.execute_job(dg.reconstructable(hello_job), worker)
    assert result.success
    captured = [
        e
        for e in worker.all_logs(result.run_id)
        if e.dagster_event is not None and e.dagster_event.event_type_value == "LOGS_CAPTURED"
    ]
    assert captured, "the run captured no logs"
    file_key = captured[0].dagster_event.logs_captured_data.file_key  # type: ignore[union-attr]
    listed = seaweedfs.client().list_objects_v2(
        Bucket=TEST_S3_BUCKET, Prefix=f"{s3_settings.s3_prefix}/dagster-logs/"
    )
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert any(result.run_id in k and k.endswith(".out") for k in keys), keys

    # another host: its own folder, nothing of the worker's on its disk
    ui = _instance(ui_home, server_url, s3_settings)
    manager = ui.compute_log_manager
    log_key = manager.build_log_key_for_run(result.run_id, file_key)
    data = manager.get_log_data(log_key)
    assert data.stdout is not None
    assert f"hello from {result.run_id}" in data.stdout.decode()


def test_one_machine_keeps_local_compute_logs(settings: GroundworkSettings) -> None:
    """The filesystem backend, and S3 without an identity in the environment
    (the embedded store's lives in a file under the home): Dagster's files."""
    assert compute_logs_for(replace(settings, blob_backend="filesystem")) is None
    embedded = replace(settings, blob_backend="s3", s3_endpoint=None)
    assert compute_logs_for(embedded) is None
    unnamed = replace(
        settings, blob_backend="s3", s3_endpoint="http://127.0.0.1:9", s3_access_key_id=None
    )
    assert compute_logs_for(unnamed) is None
