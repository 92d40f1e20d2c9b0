"""A WebDAV server for the fsspec connector's tests: WsgiDAV (PyPI `wsgidav`,
on cheroot), run as a process of its own on a loopback port and sharing one
folder, so the connector reads a real WebDAV share over HTTP (PROPFIND
listings with ETags, GETs) rather than a local path. Anonymous: it serves
a folder the test made, on loopback only."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from groundwork.errors import EngineUnavailable
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready


class WebdavServer:
    def __init__(self, home: Path, share: Path, port: int) -> None:
        self.home = home
        self.share = share
        self.port = port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _probe(self) -> str | None:
        try:
            answer = httpx.request("PROPFIND", self.base_url + "/", headers={"Depth": "0"})
        except httpx.HTTPError as exc:
            return str(exc)
        return None if answer.status_code == 207 else f"answered {answer.status_code}"

    def start(self, timeout: float = 20.0) -> WebdavServer:
        self.home.mkdir(parents=True, exist_ok=True)
        self.share.mkdir(parents=True, exist_ok=True)
        command = [
            str(Path(sys.executable).with_name("wsgidav")),
            "--host=127.0.0.1",
            f"--port={self.port}",
            f"--root={self.share}",
            "--auth=anonymous",
            "--no-config",
            "-q",
        ]
        log = self.home / "wsgidav.log"
        process = spawn_daemon(command, log, self.home / "wsgidav.pid", self.home)
        why = wait_until_ready(process, self._probe, timeout, 0.1, "wsgidav", log)
        if why is not None:
            self.stop()
            raise EngineUnavailable(f"wsgidav did not answer within {timeout:.0f} s ({why})")
        return self

    def stop(self) -> None:
        stop_by_pid_file(self.home / "wsgidav.pid", 10.0)
