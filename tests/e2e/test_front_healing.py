"""The supervisor heals the engines' authenticating fronts (issues #32, #33):
with GROUNDWORK_POSTGRES_LISTEN / GROUNDWORK_OPENSEARCH_LISTEN another host
reaches an engine only through its nginx front, so a front that dies must be
started again by the same pass that starts a stopped engine, without a human.

A front is killed two ways: its master alone (SIGKILL leaves the worker
serving, orphaned: no reload, no respawn, and the next start would find the
port taken), and the whole front (master and workers: nothing serves). After
one `heal_once` a TLS connection through the front works, served by a new,
live master.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import signal
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from groundwork_cli.supervisor import Supervisor
from resources.composition.platform import EngineEndpoints
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings
from resources.engines.nginx import EmbeddedNginx
from resources.engines.opensearch import EmbeddedOpenSearch, OpenSearchFront
from resources.engines.postgres import EmbeddedPostgres
from tests.e2e import test_engine_auth as engine_auth

OPENSEARCH_FRONT_PORT = 9495  # test_topology holds 9493, test_engine_auth 9491
#: a PostgreSQL server with TCP on, of this module's own (the engine-auth tests' fixture)
tcp_postgres = engine_auth.tcp_postgres
#: the supervisor heals once a second; a pass that restarts a front stays well under this
HEAL_PASS_SECONDS = 10.0


def _kill(front: EmbeddedNginx, whole: bool) -> int:
    """SIGKILL the front's master (whole=False) or its whole process group; the master's pid."""
    master = int(front.pid_file.read_text())
    if whole:
        os.killpg(master, signal.SIGKILL)
    else:
        os.kill(master, signal.SIGKILL)
    time.sleep(0.3)
    return master


def _live_master(front: EmbeddedNginx) -> int:
    master = int(front.pid_file.read_text())
    os.kill(master, 0)  # raises if it is gone
    assert "nginx: master" in Path(f"/proc/{master}/cmdline").read_text(errors="replace")
    return master


def _heal(supervisor: Supervisor, front: EmbeddedNginx, whole: bool) -> None:
    killed = _kill(front, whole)
    started = time.monotonic()
    supervisor.heal_once()
    assert time.monotonic() - started < HEAL_PASS_SECONDS
    assert _live_master(front) != killed
    assert "nginx front" in (supervisor.settings.home / "logs" / "supervisor.log").read_text()


def _supervisor(home: Path, endpoints: EngineEndpoints) -> Supervisor:
    settings = dataclasses.replace(GroundworkSettings.from_env(), home=home)
    (home / "logs").mkdir(parents=True, exist_ok=True)
    return Supervisor(settings, endpoints=endpoints)


@pytest.mark.parametrize("whole", [False, True], ids=["master", "whole-front"])
def test_a_killed_postgres_front_is_started_again(
    tcp_postgres: EmbeddedPostgres, tmp_path: Path, whole: bool
) -> None:
    front = tcp_postgres.front
    assert front is not None
    url = tcp_postgres.uri("postgres")
    supervisor = _supervisor(tmp_path, EngineEndpoints(url, None, postgres=tcp_postgres))
    _heal(supervisor, front, whole)
    with psycopg.connect(url, connect_timeout=5) as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT 1").fetchone() == (1,)
    healed = _live_master(front)
    assert supervisor.heal_once() == []  # healthy again: the next pass leaves it alone
    assert _live_master(front) == healed


@pytest.fixture(scope="module")
def fronted_opensearch(engines: EngineEndpoints) -> Iterator[EmbeddedOpenSearch]:
    """The shared test node (its own home and ports) behind a front of this test's own."""
    if engines.opensearch is None:
        pytest.skip("no embedded OpenSearch (an external GROUNDWORK_OPENSEARCH_URL is set)")
    node = engines.opensearch
    home = Path(tempfile.mkdtemp(prefix="gw-osheal-", dir="/tmp"))
    front = OpenSearchFront(
        home / "front",
        home / "tls",
        "127.0.0.1",
        OPENSEARCH_FRONT_PORT,
        "groundwork",
        secrets.token_urlsafe(18),
    )
    fronted = EmbeddedOpenSearch(
        node.home,
        PROJECT_ROOT / "engines" / "opensearch",
        node.http_port,
        node.transport_port,
        cluster_name=node.cluster_name,
        front=front,
    )
    front.start(node.url)
    yield fronted
    front.server().stop()  # the front only: the shared node stays up
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("whole", [False, True], ids=["master", "whole-front"])
def test_a_killed_opensearch_front_is_started_again(
    fronted_opensearch: EmbeddedOpenSearch, tmp_path: Path, whole: bool
) -> None:
    front = fronted_opensearch.front
    assert front is not None
    endpoints = EngineEndpoints("", front.url, opensearch=fronted_opensearch)
    supervisor = _supervisor(tmp_path, endpoints)
    _heal(supervisor, front.server(), whole)
    request = urllib.request.Request(f"{front.url}/_cluster/health")
    request.add_header("Authorization", _basic(front.user, front.password))
    context = ssl.create_default_context(cafile=str(front.ca_cert))
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        assert response.status == 200
    # the restarted front still authenticates: without credentials, refused
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{front.url}/_cluster/health", timeout=10, context=context)
    assert refused.value.code == 401


def _basic(user: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
