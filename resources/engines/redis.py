"""The broker of the distributed executor: Debian's `redis-server`, started by
the project under its home.

`EmbeddedRedis` writes a config that binds 127.0.0.1 (or the address given),
keeps nothing on disk (the broker's queue is rebuilt by the next run: Dagster's
event log in PostgreSQL is the record, not the broker) and requires a password
the project generates once under the home (mode 0600), so even on loopback a
client without it is refused (`NOAUTH`). Ready means an authenticated PING.
The password never appears in a command line (the config file holds it) or in
`repr`; `url` is the one place it is spelled, for the processes that need it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path
from urllib.parse import quote

from groundwork.errors import EngineUnavailable
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready


def home_password(home: Path) -> str:
    """The broker's password, made once under its home (mode 0600)."""
    path = home / "password"
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # a racing process made it first
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


class EmbeddedRedis:
    def __init__(self, home: Path, port: int = 6390, bind: str = "127.0.0.1") -> None:
        self.home = home
        self.port = port
        self.bind = bind

    def __repr__(self) -> str:
        return f"EmbeddedRedis(home={self.home!s}, port={self.port}, bind={self.bind})"

    @property
    def password(self) -> str:
        return home_password(self.home)

    @property
    def url(self) -> str:
        """redis://:<password>@host:port/0: what the executor and the workers are given."""
        return f"redis://:{quote(self.password, safe='')}@{self.bind}:{self.port}/0"

    @property
    def pid_file(self) -> Path:
        return self.home / "redis.pid"

    @property
    def log_path(self) -> Path:
        return self.home / "redis.log"

    def _write_config(self) -> Path:
        path = self.home / "redis.conf"
        body = "\n".join(
            [
                f"bind {self.bind}",
                f"port {self.port}",
                "protected-mode yes",
                f"requirepass {self.password}",
                f"dir {self.home}",
                'save ""',
                "appendonly no",
                "daemonize no",
                f"logfile {self.log_path}",
                # clients that vanished (a killed worker host) are noticed
                "tcp-keepalive 10",
                "",
            ]
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(body)
        return path

    def _probe(self) -> str | None:
        import redis

        try:
            client = redis.Redis(
                host=self.bind, port=self.port, password=self.password, socket_timeout=2
            )
            client.ping()
            client.close()
        except redis.RedisError as exc:
            return str(exc)
        return None

    def is_running(self) -> bool:
        return self._probe() is None

    def start(self, timeout: float = 20.0) -> str:
        """Start the broker, or reuse ours if it answers; return its URL."""
        if self.is_running():
            return self.url
        binary = shutil.which("redis-server")
        if binary is None:
            raise EngineUnavailable(
                "redis-server is not installed (Debian package redis-server; `./run setup` "
                "installs it), or set GROUNDWORK_BROKER_URL to a broker of your own"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        process = spawn_daemon(
            [binary, str(config)], self.home / "stdout.log", self.pid_file, self.home
        )
        why = wait_until_ready(process, self._probe, timeout, 0.1, "redis-server", self.log_path)
        if why is None:
            return self.url
        self.stop()
        raise EngineUnavailable(f"redis-server did not answer within {timeout:.0f} s ({why})")

    def stop(self, timeout: float = 10.0) -> None:
        stop_by_pid_file(self.pid_file, timeout)
