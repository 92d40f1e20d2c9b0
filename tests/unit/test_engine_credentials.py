"""The engines' credentials as settings give them: nothing changes on one
machine, and no secret ends up in a URL, a repr or Dagster's storage config."""

from __future__ import annotations

from pathlib import Path

import pytest

from resources.composition.engine_auth import (
    dagster_postgres_storage,
    external_database_url,
    opensearch_client_options,
    opensearch_front,
    postgres_listen,
)
from resources.composition.settings import GroundworkSettings
from resources.engines.nginx import ssha_entry


def _settings(tmp_path: Path, **env: str) -> GroundworkSettings:
    return GroundworkSettings.from_env({"GROUNDWORK_HOME": str(tmp_path), **env})


def test_one_machine_gets_no_listener_no_front_and_no_client_credentials(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert postgres_listen(settings) is None
    assert opensearch_front(settings) is None
    assert opensearch_client_options(settings) == {}
    assert not (tmp_path / "engine-tls").exists()


def test_a_worker_hosts_database_password_goes_to_its_passfile_not_its_url(
    tmp_path: Path,
) -> None:
    url = "postgresql://postgres@db:5433/postgres?sslmode=verify-full&sslnegotiation=direct"
    settings = _settings(
        tmp_path, GROUNDWORK_DATABASE_URL=url, GROUNDWORK_DATABASE_PASSWORD="s3cr:et\\x"
    )
    assert "s3cr" not in repr(settings)
    resolved = external_database_url(settings)
    passfile = tmp_path / "engine-tls" / "pgpass"
    assert "s3cr" not in resolved and f"passfile={passfile}".replace("/", "%2F") in resolved
    assert passfile.read_text() == "*:*:*:postgres:s3cr\\:et\\\\x\n"
    assert passfile.stat().st_mode & 0o777 == 0o600
    storage = dagster_postgres_storage(resolved)["postgres_db"]
    assert storage["password"] == {"env": "GROUNDWORK_DATABASE_PASSWORD"}
    assert storage["params"] == {"sslmode": "verify-full", "sslnegotiation": "direct"}
    assert (storage["hostname"], storage["port"], storage["db_name"]) == ("db", 5433, "postgres")


def test_the_embedded_engines_make_their_passwords_once_under_the_home(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        GROUNDWORK_POSTGRES_LISTEN="0.0.0.0:5433",
        GROUNDWORK_OPENSEARCH_LISTEN="127.0.0.1:9443",
    )
    listen = postgres_listen(settings)
    assert listen is not None and (listen.host, listen.port, listen.server_port) == (
        "0.0.0.0",
        5433,
        5434,
    )
    assert listen.connect_host == "127.0.0.1" and listen.password not in repr(listen)
    again = postgres_listen(settings)
    assert again is not None and again.password == listen.password
    front = opensearch_front(settings)
    assert front is not None and front.url == "https://127.0.0.1:9443"
    options = opensearch_client_options(settings)
    assert options["http_auth"] == ("groundwork", front.password)
    assert options["ca_certs"] == str(tmp_path / "engine-tls" / "ca.crt")
    assert front.password not in repr(front)


def test_an_external_opensearch_gets_the_configured_user_and_ca(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        GROUNDWORK_OPENSEARCH_URL="https://search:9443",
        GROUNDWORK_OPENSEARCH_PASSWORD="pw",
        GROUNDWORK_OPENSEARCH_CA="/etc/groundwork/ca.crt",
    )
    assert opensearch_client_options(settings) == {
        "http_auth": ("groundwork", "pw"),
        "ca_certs": "/etc/groundwork/ca.crt",
    }


def test_a_listen_address_without_a_port_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="host:port"):
        postgres_listen(_settings(tmp_path, GROUNDWORK_POSTGRES_LISTEN="0.0.0.0"))


def test_the_basic_auth_file_holds_a_salted_hash() -> None:
    import base64
    import hashlib

    # '-' and '!' are outside base64's alphabet, so the password cannot appear in
    # the encoded hash by chance ("pw" did, in one CI run).
    password = "not-in-base64!"
    line = ssha_entry("groundwork", password)
    user, _, value = line.strip().partition(":")
    assert user == "groundwork" and value.startswith("{SSHA}") and password not in value
    raw = base64.b64decode(value[6:])
    digest, salt = raw[:20], raw[20:]
    assert hashlib.sha1(password.encode() + salt).digest() == digest  # noqa: S324
    assert ssha_entry("groundwork", password) != line  # a new salt each time
