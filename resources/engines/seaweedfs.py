"""A real S3-compatible server for the file bytes: SeaweedFS's `weed server`
(master, volume, filer and S3 gateway in one process), built from its Go
module by `./run` into engines/seaweedfs/target/weed.

`EmbeddedSeaweedFS` starts it on 127.0.0.1 with its data under its home and an
S3 identity file holding credentials the project generates once (mode 0600):
with an identity configured the gateway refuses anonymous requests. Ready
means an authenticated write and delete succeeded (the gateway answers before
the volume server has registered with the master, and a put then fails).
SeaweedFS takes its time over SIGTERM (measured: 16.4 s from SIGTERM to exit
with -volume.preStopSeconds=1; without it, still running after 16 s), so
`stop` sends SIGTERM, waits up to 25 s for the clean exit (its filer and
volume flush their state), then SIGKILLs.

Ports: the S3 port is configured; master, volume and filer take the next
three, and each component's gRPC port is its HTTP port + 10000 (SeaweedFS's
own convention, made explicit so two homes never share a default).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from groundwork.errors import EngineUnavailable
from resources.blobs.s3 import S3Credentials, s3_client
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready

#: where ./run builds the binary (gitignored)
DEFAULT_BINARY = Path(__file__).resolve().parents[2] / "engines" / "seaweedfs" / "target" / "weed"
#: the bucket the readiness probe writes into: never the data bucket, whose
#: listing reconciliation reads
PROBE_BUCKET = "groundwork-readiness"


def home_credentials(home: Path) -> S3Credentials:
    """The embedded server's key pair, made once under its home (mode 0600)."""
    path = home / "s3-credentials.json"
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {
                "access_key_id": "GW" + secrets.token_hex(9).upper(),
                "secret_access_key": secrets.token_urlsafe(30),
            }
        )
        with contextlib.suppress(FileExistsError):  # a racing process made it first
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(body)
    data = json.loads(path.read_text())
    return S3Credentials(data["access_key_id"], data["secret_access_key"])


class EmbeddedSeaweedFS:
    def __init__(
        self,
        home: Path,
        s3_port: int,
        *,
        binary: Path = DEFAULT_BINARY,
        region: str = "us-east-1",
    ) -> None:
        self.home = home
        self.s3_port = s3_port
        self.binary = binary
        self.region = region
        self.started_seconds = 0.0
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    @property
    def credentials(self) -> S3Credentials:
        return home_credentials(self.home)

    @property
    def pid_file(self) -> Path:
        return self.home / "weed.pid"

    @property
    def log_path(self) -> Path:
        return self.home / "weed.log"

    def command(self) -> list[str]:
        master, volume, filer = self.s3_port + 1, self.s3_port + 2, self.s3_port + 3
        return [
            str(self.binary),
            "server",
            f"-dir={self.home / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-master.port.grpc={master + 10000}",
            "-master.telemetry=false",  # it would post usage statistics to an outside host
            "-master.volumeSizeLimitMB=1024",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume + 10000}",
            # each bucket is a collection that grows several volumes at its
            # first write: the default cap of 8 is reached by the second bucket
            "-volume.max=0",
            # it otherwise keeps serving 10 s after SIGTERM before it exits
            "-volume.preStopSeconds=1",
            "-filer",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer + 10000}",
            f"-filer.localSocket={self.home / 'filer.sock'}",
            "-s3",
            f"-s3.port={self.s3_port}",
            f"-s3.port.grpc={self.s3_port + 10000}",
            f"-s3.config={self._write_identities()}",
            f"-s3.localSocket={self.home / 's3.sock'}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
        ]

    def _write_identities(self) -> Path:
        credentials = self.credentials
        path = self.home / "s3-identities.json"
        body = {
            "identities": [
                {
                    "name": "groundwork",
                    "credentials": [
                        {
                            "accessKey": credentials.access_key_id,
                            "secretKey": credentials.secret_access_key,
                        }
                    ],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(body, handle)
        return path

    def client(self) -> Any:
        """One boto3 client per manager (making one costs ~0.8 s of CPU)."""
        if self._client is None:
            self._client = s3_client(self.endpoint, self.region, self.credentials, path_style=True)
        return self._client

    def is_running(self) -> bool:
        """Our server answers an authenticated request (a stranger's would refuse our key)."""
        return self._probe() is None

    def _probe(self) -> str | None:
        """None when an authenticated write and delete work; else why not."""
        import botocore.exceptions

        client = self.client()
        try:
            with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
                client.create_bucket(Bucket=PROBE_BUCKET)
            client.put_object(Bucket=PROBE_BUCKET, Key="probe", Body=b"ok")
            client.delete_object(Bucket=PROBE_BUCKET, Key="probe")
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
            return str(exc)
        return None

    def has_process(self) -> bool:
        pid = self._pid()
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def start(self, timeout: float = 90.0) -> str:
        """Start the server, or reuse ours if it answers; return its S3 endpoint."""
        started = time.monotonic()
        if self.is_running():
            return self.endpoint
        if not self.binary.exists():
            raise EngineUnavailable(
                f"no SeaweedFS binary at {self.binary}; `./run setup` builds it from the "
                "Go module proxy (needs Go), or set GROUNDWORK_S3_ENDPOINT to an S3 store"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "data").mkdir(exist_ok=True)
        process = spawn_daemon(self.command(), self.log_path, self.pid_file, self.home)
        why = wait_until_ready(process, self._probe, timeout, 0.5, "SeaweedFS", self.log_path)
        if why is None:
            self.started_seconds = time.monotonic() - started
            return self.endpoint
        self.stop()
        raise EngineUnavailable(
            f"SeaweedFS did not accept a write within {timeout:.0f} s ({why}); see {self.log_path}"
        )

    def stop(self, timeout: float = 25.0) -> None:
        stop_by_pid_file(self.pid_file, timeout)

    def _pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
