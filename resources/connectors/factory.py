"""Connectors built from their stored instances: the one place a secret
reference is read (`env:NAME` from the environment, `file:/path` from a file
the operator controls), at build time, never stored or returned.

A kind's builder is registered in BUILDERS (the web and Git connectors'
modules are imported when one of theirs is built).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.port import Connector, ConnectorError
from groundwork.connectors.s3_bucket import S3BucketSettings
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix
from resources.blobs.s3 import S3Credentials, s3_client
from resources.connectors.fsspec_files import FsspecConnector
from resources.connectors.s3_bucket import S3BucketConnector

Builder = Callable[[ConnectorInstance], Connector]


def resolve_secret(kind: str, name: str, reference: str) -> str:
    """A secret's value from its reference; a missing one is the connector's
    error (shown in its state), never an empty credential."""
    if reference.startswith("env:"):
        value = os.environ.get(reference[4:])
        if not value:
            raise ConnectorError(
                kind, None, f"secret {name}: environment variable {reference[4:]} is not set"
            )
        return value
    if reference.startswith("file:"):
        path = Path(reference[5:])
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise ConnectorError(
                kind, None, f"secret {name}: cannot read {path}: {exc.strerror}"
            ) from exc
    raise ConnectorError(kind, None, f"secret {name}: a reference is env:NAME or file:/path")


def resolved_secrets(instance: ConnectorInstance) -> dict[str, str]:
    return {
        name: resolve_secret(instance.kind, name, ref) for name, ref in instance.secret_refs.items()
    }


@functools.lru_cache(maxsize=32)
def _client(
    endpoint: str | None, region: str, key_id: str | None, secret: str | None, path_style: bool
) -> Any:
    """One boto3 client per endpoint and key (making one costs ~0.8 s of CPU,
    and a sensor builds the connector on every pass)."""
    credentials = S3Credentials(key_id, secret) if key_id and secret else None
    return s3_client(endpoint, region, credentials, path_style=path_style)


def build_s3(instance: ConnectorInstance) -> Connector:
    settings = S3BucketSettings.from_config(instance.config)
    secrets = resolved_secrets(instance)
    client = _client(
        settings.endpoint,
        settings.region,
        secrets.get("access_key_id"),
        secrets.get("secret_access_key"),
        bool(instance.config.get("path_style", settings.endpoint is not None)),
    )
    return S3BucketConnector(client, settings)


def build_fsspec(instance: ConnectorInstance) -> Connector:
    config: Mapping[str, Any] = instance.config
    if not config.get("root"):
        raise ConnectorError("fsspec", None, "an fsspec connector needs a root")
    protocol = str(config.get("protocol") or "file")
    options = dict(config.get("options") or {})
    secrets = resolved_secrets(instance)
    if protocol in ("webdav", "dav") and "password" in secrets:
        # webdav4 logs in with an (user, password) pair, which JSON cannot
        # spell and a secret reference cannot fill: the pair is made here
        username = str(options.pop("username", "") or secrets.pop("username", ""))
        if not username:
            raise ConnectorError("fsspec", None, "a WebDAV password needs options.username")
        options["auth"] = (username, secrets.pop("password"))
    options |= secrets
    return FsspecConnector(
        protocol,
        str(config["root"]),
        options=options,
        selection=ItemSelection(
            tuple(config.get("include") or ()), tuple(config.get("exclude") or ())
        ),
        subjects=SubjectsByPrefix.from_config(config.get("subjects_by_prefix")),
        subjects_file=str(config["subjects_file"]) if config.get("subjects_file") else None,
    )


def build_web_site(instance: ConnectorInstance) -> Connector:
    from resources.connectors.web_site import build_web

    return build_web(instance)


def build_git_repository(instance: ConnectorInstance) -> Connector:
    """A remote's mirror is kept under the platform's home (read when the
    connector is built, never at import)."""
    from resources.composition.settings import GroundworkSettings
    from resources.connectors.git_repository import build_git

    cache = GroundworkSettings.from_env().home / "connectors" / "git"
    return build_git(instance, resolved_secrets(instance), cache)


BUILDERS: dict[str, Builder] = {
    "s3": build_s3,
    "fsspec": build_fsspec,
    "web": build_web_site,
    "git": build_git_repository,
}


def build_connector(instance: ConnectorInstance) -> Connector:
    builder = BUILDERS.get(instance.kind)
    if builder is None:
        raise ConnectorError(
            instance.kind, None, f"no connector of kind {instance.kind!r} is installed"
        )
    try:
        return builder(instance)
    except ValueError as exc:
        raise ConnectorError(instance.kind, None, f"invalid configuration: {exc}") from exc
