"""ClamAV's scanning daemon, started by the project from Debian's `clamd`.

Signatures come from a folder the operator keeps current (`freshclam` writes
/var/lib/clamav); the tests point it at a folder with one custom signature
for the EICAR test file, so nothing is downloaded. The daemon listens on a
Unix socket under the project's home and runs in a session of its own.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from groundwork.errors import EngineUnavailable
from resources.engines.process import stop_by_pid_file
from resources.inspection.malware_clamd import ClamdScanner

#: clamd refuses streams over StreamMaxLength; the upload limit bounds files anyway.
STREAM_MAX = "300M"


class EmbeddedClamd:
    def __init__(self, home: Path, database_dir: Path) -> None:
        self.home = home
        self.database_dir = database_dir

    @property
    def socket_path(self) -> Path:
        return self.home / "clamd.sock"

    @property
    def pid_file(self) -> Path:
        return self.home / "clamd.pid"

    def scanner(self) -> ClamdScanner:
        return ClamdScanner(self.socket_path)

    def is_running(self) -> bool:
        return self.scanner().ping()

    def start(self, timeout: float = 60.0) -> Path:
        """Start clamd, or reuse ours if it answers; return its socket path."""
        if self.scanner().ping():
            return self.socket_path
        binary = shutil.which("clamd")
        if binary is None:
            raise EngineUnavailable(
                "clamd is not installed; install the Debian package clamav-daemon (./run does)"
            )
        if not any(self.database_dir.glob("*")):
            raise EngineUnavailable(
                f"no ClamAV signatures in {self.database_dir}; run freshclam or point "
                "GROUNDWORK_CLAMD_DATABASE at a folder of signature files"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        self.socket_path.unlink(missing_ok=True)
        config = self.home / "clamd.conf"
        log_path = self.home / "clamd.log"
        config.write_text(
            "\n".join(
                [
                    f"LocalSocket {self.socket_path}",
                    f"DatabaseDirectory {self.database_dir}",
                    "Foreground yes",
                    f"LogFile {log_path}",
                    f"TemporaryDirectory {self.home}",
                    f"StreamMaxLength {STREAM_MAX}",
                    "MaxFileSize 300M",
                    "MaxScanSize 300M",
                    "Bytecode no",
                    "",
                ]
            )
        )
        with open(self.home / "clamd.out", "ab") as out:
            process = subprocess.Popen(
                [binary, f"--config-file={config}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid_file.write_text(str(process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
                raise EngineUnavailable(f"clamd exited with {process.returncode}:\n{tail}")
            if self.scanner().ping():
                return self.socket_path
            time.sleep(0.2)
        process.terminate()
        raise EngineUnavailable(f"clamd did not answer within {timeout:.0f} s; see {log_path}")

    def stop(self, timeout: float = 20.0) -> None:
        stop_by_pid_file(self.pid_file, timeout)
