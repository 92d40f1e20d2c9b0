"""GROUNDWORK_BLOB_BACKEND=s3 with no GROUNDWORK_S3_ENDPOINT starts the
project's own SeaweedFS under GROUNDWORK_HOME (as PostgreSQL and OpenSearch
start): loopback only, its own generated keys (mode 0600), anonymous requests
refused, reused when already up, stopped by SIGTERM then SIGKILL."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from resources.blobs.s3 import S3BlobStore, s3_client
from resources.composition.blobs import build_blob_store, s3_credentials
from resources.composition.platform import EngineEndpoints, ensure_engines
from resources.composition.settings import GroundworkSettings

#: not the demo's (8333) nor the test session's (8343)
PORT = 8363


def test_the_s3_backend_without_an_endpoint_starts_its_own_server(
    tmp_path: Path, engines: EngineEndpoints
) -> None:
    settings = GroundworkSettings.from_env(
        {
            "GROUNDWORK_HOME": str(tmp_path / "home"),
            "GROUNDWORK_BLOB_BACKEND": "s3",
            "GROUNDWORK_S3_PORT": str(PORT),
            "GROUNDWORK_DATABASE_URL": engines.server_url,  # no second PostgreSQL
            "GROUNDWORK_KEYWORD_BACKEND": "postgres",
        }
    )
    started = ensure_engines(settings)
    server = started.seaweedfs
    assert server is not None and started.s3_endpoint == f"http://127.0.0.1:{PORT}"
    try:
        keys = settings.home / "seaweedfs" / "s3-credentials.json"
        assert keys.stat().st_mode & 0o777 == 0o600
        store = build_blob_store(settings, started.s3_endpoint)
        store.put("k/one", b"bytes in the embedded server")
        assert store.get("k/one") == b"bytes in the embedded server"
        # the bucket the platform created aborts uploads left incomplete
        rules = server.client().get_bucket_lifecycle_configuration(Bucket=settings.s3_bucket)
        assert [
            r["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] for r in rules["Rules"]
        ] == [1]

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{started.s3_endpoint}/{settings.s3_bucket}/k/one", timeout=5)
        assert refused.value.code == 403
        # it listens on loopback only
        with socket.socket() as probe:
            probe.settimeout(2)
            address = _non_loopback_address()
            if address is not None:
                assert probe.connect_ex((address, PORT)) != 0

        pid = server.pid_file.read_text()
        again = ensure_engines(settings)
        assert again.seaweedfs is not None and again.seaweedfs.pid_file.read_text() == pid
        assert build_blob_store(settings, again.s3_endpoint).get("k/one")  # its data kept
    finally:
        server.stop()
    assert not server.has_process() and not server.is_running()


def test_settings_never_show_the_secret() -> None:
    settings = GroundworkSettings.from_env(
        {
            "GROUNDWORK_BLOB_BACKEND": "s3",
            "GROUNDWORK_S3_ENDPOINT": "http://store.example:9000",
            "GROUNDWORK_S3_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "GROUNDWORK_S3_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-secret-K7MDENG",
        }
    )
    assert settings.s3_secret_access_key == "wJalrXUtnFEMI-secret-K7MDENG"
    assert "secret-K7MDENG" not in repr(settings) and "AKIDEXAMPLE" in repr(settings)
    credentials = s3_credentials(settings)
    assert credentials is not None and "secret-K7MDENG" not in repr(credentials)
    client = s3_client(settings.s3_endpoint, settings.s3_region, credentials, path_style=True)
    assert "secret-K7MDENG" not in repr(S3BlobStore(client, settings.s3_bucket))  # no request made


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_a_sensor_tick_sees_the_embedded_server_down_or_up(
    tmp_path: Path, engines: EngineEndpoints, seaweedfs: object, settings: GroundworkSettings
) -> None:
    """Sensors skip a tick while an engine is down instead of starting it."""
    from resources.dagster_glue.platform_resource import engines_running
    from tests.conftest import TEST_S3_PORT

    env = {
        "GROUNDWORK_BLOB_BACKEND": "s3",
        "GROUNDWORK_DATABASE_URL": engines.server_url,
        "GROUNDWORK_KEYWORD_BACKEND": "postgres",
    }
    down = GroundworkSettings.from_env({**env, "GROUNDWORK_HOME": str(tmp_path / "none")})
    assert engines_running(down) == "SeaweedFS"
    up = GroundworkSettings.from_env(
        {**env, "GROUNDWORK_HOME": str(settings.home), "GROUNDWORK_S3_PORT": str(TEST_S3_PORT)}
    )
    assert engines_running(up) is None
