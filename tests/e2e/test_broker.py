"""The broker of the distributed job admits only the platform: the project's
redis-server requires the password it generated (mode 0600 under its home),
and a worker host refuses to start without every URL it joins by."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from groundwork_cli.commands.worker import missing_configuration
from resources.composition.settings import PROJECT_ROOT
from resources.engines.redis import EmbeddedRedis

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server not installed (./run setup)"
)


def test_a_client_without_the_password_is_refused(tmp_path: Path) -> None:
    broker = EmbeddedRedis(tmp_path / "redis", 6396)
    url = broker.start()
    try:
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=6396, socket_timeout=2).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=6396, password="guess", socket_timeout=2).ping()
        assert redis.Redis.from_url(url, socket_timeout=2).ping() is True
        mode = stat.S_IMODE((tmp_path / "redis" / "password").stat().st_mode)
        assert mode == 0o600
        assert broker.password not in repr(broker)
        # a second start reuses the running broker instead of failing on its port
        assert broker.start() == url
    finally:
        broker.stop()
    assert not broker.is_running()


def test_a_worker_host_refuses_to_start_without_its_urls(tmp_path: Path) -> None:
    missing = missing_configuration({"GROUNDWORK_BLOB_BACKEND": "filesystem"})
    assert [m.split(" ")[0] for m in missing] == [
        "GROUNDWORK_BROKER_URL",
        "GROUNDWORK_DATABASE_URL",
        "GROUNDWORK_OPENSEARCH_URL",
        "GROUNDWORK_BLOB_BACKEND=s3",
    ]
    complete = {
        "GROUNDWORK_BROKER_URL": "redis://:p@127.0.0.1:6396/0",
        "GROUNDWORK_DATABASE_URL": "postgresql://db/postgres",
        "GROUNDWORK_OPENSEARCH_URL": "http://127.0.0.1:9200",
        "GROUNDWORK_BLOB_BACKEND": "s3",
        "GROUNDWORK_S3_ENDPOINT": "http://127.0.0.1:8333",
    }
    assert missing_configuration(complete) == []
    done = subprocess.run(
        [sys.executable, "-m", "groundwork_cli.main", "worker", "--name", "x"],
        env={"PATH": "/usr/bin:/bin", "GROUNDWORK_HOME": str(tmp_path)},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "GROUNDWORK_DATABASE_URL" in done.stderr and "no shared disk" in done.stderr
