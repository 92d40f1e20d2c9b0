"""An SFTP server for the fsspec connector's tests: Debian's OpenSSH `sshd`
(package openssh-server, `./run setup` installs it), started in a folder of
its own on a loopback port with keys made for it, so the connector reads a
real remote filesystem over the real protocol rather than a local path.

Only the key made here logs in (no passwords, no PAM), as the user running
the tests; `internal-sftp` serves the files. The server's host key and the
client's key live in the folder; `connector_options` is what a connector
instance's `options` names (the key by its path: a reference to a file the
operator controls, never the key itself).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from groundwork.errors import EngineUnavailable
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready

SSHD = Path("/usr/sbin/sshd")


class SftpServer:
    def __init__(self, home: Path, port: int) -> None:
        self.home = home
        self.port = port

    @property
    def pid_file(self) -> Path:
        return self.home / "sshd.pid"

    @property
    def log_path(self) -> Path:
        return self.home / "sshd.log"

    @property
    def client_key(self) -> Path:
        return self.home / "client_ed25519"

    def connector_options(self) -> dict[str, Any]:
        """fsspec's sftp options (paramiko's connect arguments) for this server."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "username": getpass.getuser(),
            "key_filename": str(self.client_key),
            "look_for_keys": False,
            "allow_agent": False,
        }

    def _keys(self) -> None:
        for name in ("host_ed25519", "client_ed25519"):
            if not (self.home / name).exists():
                subprocess.run(
                    ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.home / name)],
                    check=True,
                    capture_output=True,
                )
        (self.home / "authorized_keys").write_text((self.home / "client_ed25519.pub").read_text())

    def _config(self) -> Path:
        path = self.home / "sshd_config"
        path.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.home / 'host_ed25519'}",
                    f"PidFile {self.pid_file}",
                    f"AuthorizedKeysFile {self.home / 'authorized_keys'}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "UsePAM no",
                    # the test's temporary folders are not sshd's usual 0700 homes
                    "StrictModes no",
                    "Subsystem sftp internal-sftp",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        return path

    def _probe(self) -> str | None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
                banner = conn.recv(64)
        except OSError as exc:
            return str(exc)
        return None if banner.startswith(b"SSH-2.0") else f"answered {banner!r}"

    def start(self, timeout: float = 20.0) -> SftpServer:
        if not SSHD.exists() or shutil.which("ssh-keygen") is None:
            raise EngineUnavailable(
                "sshd is not installed (Debian package openssh-server; `./run setup` installs it)"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        self._keys()
        if os.geteuid() == 0:
            # sshd's privilege separation directory (the package's service makes it)
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        process = spawn_daemon(
            [str(SSHD), "-D", "-e", "-f", str(self._config())],
            self.log_path,
            self.home / "sshd.spawn.pid",
            self.home,
        )
        why = wait_until_ready(process, self._probe, timeout, 0.1, "sshd", self.log_path)
        if why is not None:
            self.stop()
            raise EngineUnavailable(f"sshd did not answer within {timeout:.0f} s ({why})")
        return self

    def stop(self) -> None:
        stop_by_pid_file(self.home / "sshd.spawn.pid", 10.0)
