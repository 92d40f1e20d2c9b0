"""Shared fixtures: real engines, started once per session.

Tests run against the project's own embedded PostgreSQL + pgvector and
OpenSearch (or the external ones named by GROUNDWORK_DATABASE_URL /
GROUNDWORK_OPENSEARCH_URL). Their home and ports differ from the demo's, so a
running demo is not disturbed. Isolation between tests is by construction: a
fresh tenant id per test and an index prefix per session.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from resources.blobs.s3 import S3BlobStore
from resources.composition.platform import EngineEndpoints, Platform, connect, ensure_engines
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.engines.clamd import EmbeddedClamd
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from testbed.engine_lease import EngineLease

SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
TEST_DATABASE = "groundwork_test"


def test_settings() -> GroundworkSettings:
    env = dict(os.environ)
    env.setdefault("GROUNDWORK_HOME", str(PROJECT_ROOT / ".groundwork-test"))
    env.setdefault("GROUNDWORK_OPENSEARCH_PORT", "9211")
    env.setdefault("GROUNDWORK_OPENSEARCH_TRANSPORT_PORT", "9311")
    return GroundworkSettings.from_env(env)


@pytest.fixture(scope="session")
def settings() -> Iterator[GroundworkSettings]:
    """Also exported to the environment: Dagster resources and sensors build
    their settings from it at execution time, and must see the test engines."""
    resolved = test_settings()
    exported = {
        "GROUNDWORK_HOME": str(resolved.home),
        "GROUNDWORK_OPENSEARCH_PORT": str(resolved.opensearch_http_port),
        "GROUNDWORK_OPENSEARCH_TRANSPORT_PORT": str(resolved.opensearch_transport_port),
    }
    saved = {k: os.environ.get(k) for k in exported}
    os.environ.update(exported)
    yield resolved
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def engine_lease(settings: GroundworkSettings) -> Iterator[EngineLease]:
    """This session's share of the test home's engines (testbed/engine_lease.py)."""
    lease = EngineLease(settings.home)
    yield lease
    lease.release()


def stop_engines_at_the_end(lease: EngineLease) -> bool:
    """Whether this session stops the engines it used: unless kept
    (GROUNDWORK_KEEP_ENGINES=1) or still used by another session on this home."""
    return os.environ.get("GROUNDWORK_KEEP_ENGINES") != "1" and lease.last_out()


@pytest.fixture(scope="session")
def engines(settings: GroundworkSettings, engine_lease: EngineLease) -> Iterator[EngineEndpoints]:
    endpoints = ensure_engines(settings)
    yield endpoints
    if stop_engines_at_the_end(engine_lease):
        if endpoints.opensearch is not None:
            endpoints.opensearch.stop()
        if endpoints.postgres is not None:
            endpoints.postgres.stop()


@pytest.fixture(scope="session")
def index_prefix() -> str:
    return f"gwtest-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def platform(
    settings: GroundworkSettings, engines: EngineEndpoints, index_prefix: str
) -> Iterator[Platform]:
    p = connect(settings, engines, database=TEST_DATABASE, index_prefix=index_prefix)
    yield p
    drop = getattr(p.keywords, "drop", None)
    if drop is not None:
        drop()
    p.close()


@pytest.fixture(scope="session")
def pg_keyword_platform(
    settings: GroundworkSettings, engines: EngineEndpoints
) -> Iterator[Platform]:
    p = connect(replace(settings, keyword_backend="postgres"), engines, database=TEST_DATABASE)
    yield p
    p.close()


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, settings: GroundworkSettings, index_prefix: str
) -> None:
    """The CLI builds its settings from the environment: point it at the test
    database and indexes (a test that needs more overrides this fixture and
    asks for it)."""
    monkeypatch.setenv("GROUNDWORK_DATABASE_NAME", TEST_DATABASE)
    monkeypatch.setenv("GROUNDWORK_INDEX_PREFIX", index_prefix)


@pytest.fixture
def tenant_id(platform: Platform) -> str:
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    return tenant


# The EICAR anti-virus test file, assembled so this source file is not itself a test file.
EICAR = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$" + b"EICAR-STANDARD-ANTIVIRUS-TEST-FILE!" + b"$H+H*"
SIGNATURE = "Groundwork.Test.EICAR"


@pytest.fixture(scope="session")
def eicar_clamd(settings: GroundworkSettings, engine_lease: EngineLease) -> Iterator[EmbeddedClamd]:
    """A real clamd on a one-signature database for EICAR (a ClamAV hash
    signature, md5:size:name): no signature download."""
    if shutil.which("clamd") is None:
        pytest.skip("clamd not installed (Debian clamav-daemon)")
    home = settings.home / "clamd-test"
    database = home / "signatures"
    database.mkdir(parents=True, exist_ok=True)
    (database / "groundwork.hdb").write_text(
        f"{hashlib.md5(EICAR).hexdigest()}:{len(EICAR)}:{SIGNATURE}\n"
    )
    daemon = EmbeddedClamd(home, database)
    daemon.start()
    yield daemon
    if engine_lease.last_out():  # not kept by GROUNDWORK_KEEP_ENGINES: it always stopped
        daemon.stop()


def shared_data_or_skip(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared evaluation data not present: {path} (only on the development machine)")
    return path


#: the test SeaweedFS's S3 port (and the next three): not the demo's 8333
TEST_S3_PORT = 8343
TEST_S3_BUCKET = "groundwork-test"


@pytest.fixture(scope="session")
def seaweedfs(
    settings: GroundworkSettings, engine_lease: EngineLease
) -> Iterator[EmbeddedSeaweedFS]:
    """A real S3-compatible server (SeaweedFS, built by ./run) with the test
    bucket created; stopped at the end as the engines are."""
    server = EmbeddedSeaweedFS(settings.home / "seaweedfs", TEST_S3_PORT)
    server.start()
    S3BlobStore(server.client(), TEST_S3_BUCKET).ensure_bucket()
    yield server
    if stop_engines_at_the_end(engine_lease):
        server.stop()


def settings_on_seaweedfs(
    settings: GroundworkSettings, seaweedfs: EmbeddedSeaweedFS, folder: str
) -> GroundworkSettings:
    """`settings` with the blob backend on the test SeaweedFS, by settings as an
    operator names a store, in a folder of the test bucket of its own
    (`folder-<random>`)."""
    credentials = seaweedfs.credentials
    return replace(
        settings,
        blob_backend="s3",
        s3_endpoint=seaweedfs.endpoint,
        s3_bucket=TEST_S3_BUCKET,
        s3_prefix=f"{folder}-{uuid.uuid4().hex[:8]}",
        s3_access_key_id=credentials.access_key_id,
        s3_secret_access_key=credentials.secret_access_key,
    )


@pytest.fixture(scope="session")
def s3_platform(
    settings: GroundworkSettings,
    engines: EngineEndpoints,
    index_prefix: str,
    seaweedfs: EmbeddedSeaweedFS,
) -> Iterator[Platform]:
    """The test platform with its bytes in the test SeaweedFS (a folder of the
    test bucket of its own), configured as an operator would: by settings."""
    s3_settings = settings_on_seaweedfs(settings, seaweedfs, "platform")
    p = connect(s3_settings, engines, database=TEST_DATABASE, index_prefix=index_prefix)
    yield p
    p.close()
