"""Engines that admit only the platform: for each engine a request without
its credentials (or without TLS) is refused, and the platform's own client,
configured by settings, works.

PostgreSQL is a server of this test's own (the shared test server stays on
its socket); OpenSearch is the shared test node behind the authenticating
proxy this test starts; the broker and SeaweedFS are the project's as the
several-hosts tests run them.
"""

from __future__ import annotations

import secrets
import shutil
import ssl
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from resources.composition.platform import EngineEndpoints
from resources.engines.opensearch import OpenSearchFront
from resources.engines.postgres import EmbeddedPostgres, PostgresListen
from resources.engines.redis import EmbeddedRedis
from resources.engines.seaweedfs import EmbeddedSeaweedFS
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from testbed.index_records import chunk

PG_PORT = 5491
OPENSEARCH_FRONT_PORT = 9491
REDIS_PORT = 6491


@pytest.fixture(scope="module")
def tcp_postgres() -> Iterator[EmbeddedPostgres]:
    # a short path: the socket's path must stay under 108 bytes
    home = Path(tempfile.mkdtemp(prefix="gw-pg-", dir="/tmp"))
    server = EmbeddedPostgres(
        home / "pgdata", PostgresListen("127.0.0.1", PG_PORT, secrets.token_urlsafe(18))
    )
    server.start()
    yield server
    server.stop()
    shutil.rmtree(home, ignore_errors=True)


def _refusal(conninfo: str) -> str:
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(conninfo, connect_timeout=5).close()
    return str(refused.value)


def test_postgres_over_tcp_wants_tls_and_a_scram_password(tcp_postgres: EmbeddedPostgres) -> None:
    listen = tcp_postgres.listen
    assert listen is not None
    url = tcp_postgres.uri("postgres")
    assert listen.password not in url and "sslmode=verify-full" in url
    with psycopg.connect(url) as conn:
        assert conn.pgconn.ssl_in_use
        method = conn.execute("SHOW password_encryption").fetchone()
        verifier = conn.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'"
        ).fetchone()
        hba = conn.execute(
            "SELECT type, auth_method FROM pg_hba_file_rules WHERE type <> 'local'"
        ).fetchall()
    assert method == ("scram-sha-256",)
    assert verifier is not None and verifier[0].startswith("SCRAM-SHA-256$")
    assert hba and all(row == ("host", "scram-sha-256") for row in hba), hba
    # Dagster's storage goes through psycopg2 (its own libpq): the same URL works
    import psycopg2

    psycopg2.connect(url).close()

    front = f"host=127.0.0.1 port={listen.port} user=postgres dbname=postgres"
    tls = "sslmode=require sslnegotiation=direct"
    # no password: refused (a passfile nobody named, no PGPASSWORD)
    assert "password" in _refusal(f"{front} {tls} passfile=/nonexistent")
    # a wrong password: refused
    assert "password authentication failed" in _refusal(f"{front} {tls} password=wrong")
    # the right password without TLS: the front speaks only TLS
    _refusal(f"{front} sslmode=disable password={listen.password}")
    # the server's own port (127.0.0.1 only) asks for the password too
    server = f"host=127.0.0.1 port={listen.server_port} user=postgres dbname=postgres"
    assert "password" in _refusal(f"{server} sslmode=disable passfile=/nonexistent")
    # the front's certificate is the home's CA's, for the name the client dialled
    ca = tcp_postgres.tls_home / "ca.crt"
    with psycopg.connect(
        f"{front} sslmode=verify-full sslnegotiation=direct sslrootcert={ca} "
        f"password={listen.password}"
    ):
        pass
    mode = (tcp_postgres.tls_home / "pgpass").stat().st_mode & 0o777
    assert mode == 0o600 and (tcp_postgres.tls_home / "postgres.key").stat().st_mode & 0o077 == 0


@pytest.fixture(scope="module")
def opensearch_front(engines: EngineEndpoints) -> Iterator[OpenSearchFront]:
    """The shared test node (127.0.0.1) behind a front of this test's own."""
    if engines.opensearch is None:
        pytest.skip("no embedded OpenSearch (an external GROUNDWORK_OPENSEARCH_URL is set)")
    home = Path(tempfile.mkdtemp(prefix="gw-osfront-", dir="/tmp"))
    front = OpenSearchFront(
        home / "front",
        home / "tls",
        "127.0.0.1",
        OPENSEARCH_FRONT_PORT,
        "groundwork",
        secrets.token_urlsafe(18),
    )
    front.start(engines.opensearch.url)
    yield front
    front.server().stop()
    shutil.rmtree(home, ignore_errors=True)


def _status(url: str, context: ssl.SSLContext, auth: tuple[str, str] | None = None) -> int:
    request = urllib.request.Request(url)
    if auth is not None:
        import base64

        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_opensearch_front_admits_only_the_platform(opensearch_front: OpenSearchFront) -> None:
    front = opensearch_front
    context = ssl.create_default_context(cafile=str(front.ca_cert))
    health = f"{front.url}/_cluster/health"
    assert _status(health, context) == 401
    assert _status(health, context, (front.user, "wrong")) == 401
    assert _status(health, context, ("admin", front.password)) == 401
    assert _status(health, context, (front.user, front.password)) == 200
    # plain HTTP on the front's port is not served
    assert (
        _status(f"http://127.0.0.1:{front.port}/_cluster/health", ssl.create_default_context())
        == 400
    )
    # a client that does not trust the home's CA does not talk to it at all
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(health, timeout=10, context=ssl.create_default_context())
    # the password file holds no clear password
    assert front.password not in (front.home / "htpasswd").read_text()
    assert front.password not in (front.home / "nginx.conf").read_text()

    keywords = OpenSearchKeywordIndex(
        client_for(front.url, http_auth=(front.user, front.password), ca_certs=str(front.ca_cert)),
        f"gwtest-auth-{uuid.uuid4().hex[:6]}",
    )
    keywords.ensure_schema()
    try:
        tenant = f"auth-{uuid.uuid4().hex[:8]}"
        keywords.upsert([chunk(tenant, "lantern harbor through the front")])
        assert len(keywords.chunk_ids(tenant, live_only=False)) == 1
    finally:
        keywords.drop()
    anonymous = OpenSearchKeywordIndex(
        client_for(front.url, ca_certs=str(front.ca_cert)), f"gwtest-anon-{uuid.uuid4().hex[:6]}"
    )
    with pytest.raises(Exception, match="401|nauthori"):
        anonymous.ensure_schema()


def test_the_broker_wants_its_password(tmp_path: Path) -> None:
    import redis

    broker = EmbeddedRedis(tmp_path / "redis", REDIS_PORT)
    broker.start()
    try:
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=REDIS_PORT).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=REDIS_PORT, password="wrong").ping()
        assert redis.Redis.from_url(broker.url).ping()
    finally:
        broker.stop()


def test_object_storage_refuses_anonymous_requests(seaweedfs: EmbeddedSeaweedFS) -> None:
    from tests.conftest import TEST_S3_BUCKET

    for url in (f"{seaweedfs.endpoint}/", f"{seaweedfs.endpoint}/{TEST_S3_BUCKET}/probe"):
        request = urllib.request.Request(url, method="GET")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403, url
    put = urllib.request.Request(
        f"{seaweedfs.endpoint}/{TEST_S3_BUCKET}/anonymous", data=b"x", method="PUT"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(put, timeout=10)
    assert refused.value.code == 403
    seaweedfs.client().list_objects_v2(Bucket=TEST_S3_BUCKET, MaxKeys=1)  # the platform's key works
