"""A WebDAV server for the fsspec connector's tests: WsgiDAV (PyPI `wsgidav`,
on cheroot), run as a process of its own on a loopback port and sharing one
folder, so the connector reads a real WebDAV share over HTTP (PROPFIND
listings with ETags, GETs) rather than a local path. Anonymous, or with one
user and password (HTTP basic authentication) when `password` is given."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import yaml

from groundwork.errors import EngineUnavailable
from resources.engines.process import spawn_daemon, stop_by_pid_file, wait_until_ready


class WebdavServer:
    def __init__(
        self, home: Path, share: Path, port: int, user: str = "reader", password: str | None = None
    ) -> None:
        self.home = home
        self.share = share
        self.port = port
        self.user = user
        self.password = password

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _probe(self) -> str | None:
        try:
            answer = httpx.request(
                "PROPFIND",
                self.base_url + "/",
                headers={"Depth": "0"},
                auth=(self.user, self.password) if self.password else None,
            )
        except httpx.HTTPError as exc:
            return str(exc)
        return None if answer.status_code == 207 else f"answered {answer.status_code}"

    def _config(self) -> Path:
        """WsgiDAV's configuration: the share, and its one user (basic auth)."""
        config: dict[str, object] = {
            "host": "127.0.0.1",
            "port": self.port,
            "provider_mapping": {"/": str(self.share)},
            "verbose": 1,
        }
        if self.password:
            config["http_authenticator"] = {
                "accept_basic": True,
                "accept_digest": False,
                "default_to_digest": False,
            }
            config["simple_dc"] = {"user_mapping": {"*": {self.user: {"password": self.password}}}}
        else:
            config["simple_dc"] = {"user_mapping": {"*": True}}  # anonymous
        path = self.home / "wsgidav.yaml"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def start(self, timeout: float = 20.0) -> WebdavServer:
        self.home.mkdir(parents=True, exist_ok=True)
        self.share.mkdir(parents=True, exist_ok=True)
        command = [str(Path(sys.executable).with_name("wsgidav")), f"--config={self._config()}"]
        log = self.home / "wsgidav.log"
        process = spawn_daemon(command, log, self.home / "wsgidav.pid", self.home)
        why = wait_until_ready(process, self._probe, timeout, 0.1, "wsgidav", log)
        if why is not None:
            self.stop()
            raise EngineUnavailable(f"wsgidav did not answer within {timeout:.0f} s ({why})")
        return self

    def stop(self) -> None:
        stop_by_pid_file(self.home / "wsgidav.pid", 10.0)
