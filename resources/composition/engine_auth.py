"""The engines' credentials as the settings give them: what the embedded
engines listen with beyond their socket or loopback, and what the platform's
clients present (docs/several-hosts.md).

Nothing here is needed on one machine: without GROUNDWORK_POSTGRES_LISTEN,
GROUNDWORK_OPENSEARCH_LISTEN, GROUNDWORK_DATABASE_PASSWORD and
GROUNDWORK_OPENSEARCH_PASSWORD every function returns what the platform used
before (the socket URL, the node's loopback URL, no credentials). Passwords
the operator does not give are made once under the home (0600); URLs never
carry them (libpq reads a passfile the URL names; OpenSearch's client gets
them apart from its URL).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from resources.composition.settings import GroundworkSettings
from resources.engines.opensearch import OpenSearchFront
from resources.engines.postgres import PostgresListen, with_passfile, write_passfile
from resources.engines.tls import home_secret


def engine_tls_home(settings: GroundworkSettings) -> Path:
    """The home's CA and the engines' certificates (the embedded PostgreSQL
    uses <pgdata>/../engine-tls, the same folder)."""
    return settings.home / "engine-tls"


def _host_port(value: str, name: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{name} is host:port (127.0.0.1:5433, 0.0.0.0:5433), not {value!r}")
    return host, int(port)


def _names(host: str) -> tuple[str, ...]:
    """The names a certificate carries: the bound address, and this host's
    name (what other hosts dial when it binds every address)."""
    return (host, socket.gethostname(), socket.getfqdn())


def postgres_listen(settings: GroundworkSettings) -> PostgresListen | None:
    if not settings.postgres_listen:
        return None
    host, port = _host_port(settings.postgres_listen, "GROUNDWORK_POSTGRES_LISTEN")
    password = settings.database_password or home_secret(
        engine_tls_home(settings) / "postgres-password"
    )
    return PostgresListen(host, port, password, _names(host))


def external_database_url(settings: GroundworkSettings) -> str:
    """GROUNDWORK_DATABASE_URL, naming a passfile of this host's home when
    GROUNDWORK_DATABASE_PASSWORD is given (the URL itself stays free of it)."""
    assert settings.database_url is not None
    url = settings.database_url
    if settings.database_password and not urlsplit(url).password:
        passfile = write_passfile(engine_tls_home(settings) / "pgpass", settings.database_password)
        url = with_passfile(url, passfile)
    return url


def opensearch_front(settings: GroundworkSettings) -> OpenSearchFront | None:
    if not settings.opensearch_listen:
        return None
    host, port = _host_port(settings.opensearch_listen, "GROUNDWORK_OPENSEARCH_LISTEN")
    password = settings.opensearch_password or home_secret(
        settings.home / "opensearch-front" / "password"
    )
    return OpenSearchFront(
        home=settings.home / "opensearch-front",
        tls_home=engine_tls_home(settings),
        host=host,
        port=port,
        user=settings.opensearch_user,
        password=password,
        names=_names(host),
    )


def opensearch_client_options(settings: GroundworkSettings) -> dict[str, Any]:
    """client_for's keyword arguments: the embedded front's user and CA, or
    those given for GROUNDWORK_OPENSEARCH_URL; none on loopback."""
    front = None if settings.opensearch_url else opensearch_front(settings)
    if front is not None:
        return {"http_auth": (front.user, front.password), "ca_certs": str(front.ca_cert)}
    options: dict[str, Any] = {}
    if settings.opensearch_password:
        options["http_auth"] = (settings.opensearch_user, settings.opensearch_password)
    if settings.opensearch_ca:
        options["ca_certs"] = str(settings.opensearch_ca)
    return options


def dagster_postgres_storage(
    url: str, password_env: str = "GROUNDWORK_DATABASE_PASSWORD"
) -> dict[str, Any]:
    """dagster-postgres's `postgres_db` storage config for a libpq URL whose
    password is not in it: the password as `{env: ...}`, which each process
    resolves from its own environment (the instance reference a worker host
    receives through the broker carries the name, never the value), the TLS
    parameters as they are; the passfile is this host's and is dropped."""
    from urllib.parse import parse_qsl

    parts = urlsplit(url)
    params = {k: v for k, v in parse_qsl(parts.query) if k != "passfile"}
    return {
        "postgres_db": {
            "username": parts.username or "postgres",
            "password": {"env": password_env},
            "hostname": parts.hostname or "127.0.0.1",
            "port": parts.port or 5432,
            "db_name": parts.path.lstrip("/"),
            "scheme": "postgresql+psycopg2",
            "params": params,
        }
    }
