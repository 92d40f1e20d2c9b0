"""Connector instances, configured per tenant: add, list, pause, resume,
remove. The CLI (`groundwork source ...`) and `/v1/connectors` call these, so
the rules live here once:

- a configuration holds no secret: a key that names one (password, token,
  secret, credentials ...) is refused, and credentials are given as
  references (`env:NAME` or `file:/absolute/path`) that only the connector
  factory reads, when it builds the connector;
- what is shown never includes a reference's target, only which secrets are set;
- removing an instance removes its documents through the deletion path
  (a source that is not connected any more must not stay searchable).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from groundwork.catalog import Catalog
from groundwork.connectors.catalog import ConnectorCatalog, ConnectorInstance, ConnectorState
from groundwork.connectors.inbox import INBOX_KIND, INBOX_NAME
from groundwork.errors import NotFound, Refused
from groundwork.lifecycle import Indexes, request_deletion

KINDS = ("s3", "fsspec", "web", "git")
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
SECRET_REFERENCE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:/\S+)$")
#: configuration keys that would hold a secret in clear
SECRET_WORDS = ("password", "passwd", "secret", "token", "credential", "private_key", "api_key")


class ConnectorPorts(Protocol):
    """What the connector services need: the catalog and both indexes (to
    remove an instance's documents) and the connector catalog."""

    @property
    def catalog(self) -> Catalog: ...

    def indexes(self) -> Indexes: ...

    def connector_catalog(self) -> ConnectorCatalog: ...


@dataclass(frozen=True)
class ConnectorRequest:
    kind: str
    name: str
    config: Mapping[str, Any] = field(default_factory=dict)
    secret_refs: Mapping[str, str] = field(default_factory=dict)
    subjects: Sequence[str] | None = None
    freshness_seconds: int = 3600
    interval_seconds: int = 300


def _invalid(message: str, alternative: str) -> Refused:
    return Refused(message, alternative, code="invalid")


def _secret_keys(config: Mapping[str, Any], path: str = "") -> list[str]:
    found = []
    for key, value in config.items():
        where = f"{path}{key}"
        if any(word in str(key).lower() for word in SECRET_WORDS):
            found.append(where)
        if isinstance(value, Mapping):
            found += _secret_keys(value, f"{where}.")
    return found


def validate(request: ConnectorRequest) -> None:
    if request.kind not in KINDS:
        raise _invalid(f"unknown connector kind {request.kind!r}", f"use one of {', '.join(KINDS)}")
    if not NAME.match(request.name):
        raise _invalid(
            f"invalid connector name {request.name!r}",
            "use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    if request.name == INBOX_NAME:
        raise _invalid(
            f"the name {INBOX_NAME!r} is the tenant's inbox folder's",
            "choose another name; files dropped in the inbox folder need no connector",
        )
    leaked = _secret_keys(request.config)
    if leaked:
        raise _invalid(
            f"the configuration holds what looks like a secret ({', '.join(leaked)})",
            "give credentials as secret references (env:NAME or file:/path), never in clear",
        )
    for name, reference in request.secret_refs.items():
        if not SECRET_REFERENCE.match(reference):
            raise _invalid(
                f"secret {name!r} is not a reference",
                "give env:VARIABLE_NAME or file:/absolute/path the operator controls",
            )
    if request.subjects is not None and not [s for s in request.subjects if s.strip()]:
        raise _invalid("subjects cannot be empty", "leave them out to share with the whole tenant")
    if request.freshness_seconds <= 0 or request.interval_seconds <= 0:
        raise _invalid("intervals are positive seconds", "give a freshness and interval above 0")


@dataclass(frozen=True)
class ConnectorView:
    """An instance and its state, as every transport shows it (no secret)."""

    instance: ConnectorInstance
    state: ConnectorState | None
    behind: bool

    def to_dict(self) -> dict[str, Any]:
        i, s = self.instance, self.state
        counts = s.counts if s else None
        return {
            "instance_id": i.instance_id,
            "name": i.name,
            "kind": i.kind,
            "config": dict(i.config),
            "secrets": sorted(i.secret_refs),
            "subjects": list(i.subjects),
            "paused": i.paused,
            "freshness_seconds": i.freshness_seconds,
            "interval_seconds": i.interval_seconds,
            "last_pass": s.last_pass_no if s else 0,
            "last_started": _iso(s.last_started if s else None),
            "last_finished": _iso(s.last_finished if s else None),
            "seen": counts.seen if counts else 0,
            "changed": counts.changed if counts else 0,
            "deleted": counts.deleted if counts else 0,
            "failed": counts.failed if counts else 0,
            "rescoped": counts.rescoped if counts else 0,
            "last_error": counts.last_error if counts else None,
            "notes": list(counts.notes) if counts else [],
            "lag_seconds": s.lag_seconds if s else None,
            "behind": self.behind,
            "items": s.items if s else 0,
            "item_errors": [{"item_id": a, "reason": b} for a, b in (s.item_errors if s else ())],
        }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def is_behind(state: ConnectorState | None, freshness_seconds: int) -> bool:
    """Behind its freshness target: no finished pass yet, or the last
    finished one began longer ago than the target (a paused instance too:
    pausing does not make stale documents fresh)."""
    if state is None or state.lag_seconds is None:
        return True
    return state.lag_seconds > freshness_seconds


def _view(catalog: ConnectorCatalog, instance: ConnectorInstance) -> ConnectorView:
    state = catalog.state(instance.tenant_id, instance.instance_id)
    return ConnectorView(instance, state, is_behind(state, instance.freshness_seconds))


def add_connector(
    ports: ConnectorPorts, tenant_id: str, request: ConnectorRequest
) -> ConnectorView:
    validate(request)
    catalog = ports.connector_catalog()
    subjects = tuple(sorted({s.strip() for s in request.subjects or () if s.strip()}))
    instance = ConnectorInstance(
        instance_id=f"con_{uuid.uuid4().hex[:16]}",
        tenant_id=tenant_id,
        kind=request.kind,
        name=request.name,
        config=dict(request.config),
        secret_refs=dict(request.secret_refs),
        subjects=subjects or (f"tenant:{tenant_id}",),
        freshness_seconds=request.freshness_seconds,
        interval_seconds=request.interval_seconds,
    )
    try:
        added = catalog.add_instance(instance)
    except KeyError:
        raise Refused(
            f"a connector named {request.name!r} exists already",
            "choose another name, or remove the existing one first",
            code="exists",
        ) from None
    return _view(catalog, added)


def list_connectors(ports: ConnectorPorts, tenant_id: str) -> list[ConnectorView]:
    catalog = ports.connector_catalog()
    return [_view(catalog, i) for i in catalog.instances(tenant_id)]


def connector_overview(ports: ConnectorPorts) -> list[ConnectorView]:
    """Every tenant's instances and their state (the control plane's view:
    ports on the platform, not a tenant view)."""
    catalog = ports.connector_catalog()
    return [_view(catalog, i) for i in catalog.instances()]


def connector_by_id(ports: ConnectorPorts, instance_id: str) -> ConnectorInstance:
    found = [i for i in ports.connector_catalog().instances() if i.instance_id == instance_id]
    if not found:
        raise NotFound(f"no connector {instance_id}")
    return found[0]


def _found(catalog: ConnectorCatalog, tenant_id: str, name: str) -> ConnectorInstance:
    instance = catalog.instance(tenant_id, name)
    if instance is None:
        raise NotFound(f"no connector {name!r}")
    return instance


def connector(ports: ConnectorPorts, tenant_id: str, name: str) -> ConnectorView:
    catalog = ports.connector_catalog()
    return _view(catalog, _found(catalog, tenant_id, name))


def pause_connector(
    ports: ConnectorPorts, tenant_id: str, name: str, paused: bool = True
) -> ConnectorView:
    catalog = ports.connector_catalog()
    instance = _found(catalog, tenant_id, name)
    catalog.set_paused(tenant_id, instance.instance_id, paused)
    return _view(catalog, _found(catalog, tenant_id, name))


def remove_connector(ports: ConnectorPorts, tenant_id: str, name: str) -> int:
    """Removes the instance and its documents (through the deletion path:
    unsearchable at once, tombstoned by the sweep); returns how many."""
    catalog = ports.connector_catalog()
    instance = _found(catalog, tenant_id, name)
    if instance.kind == INBOX_KIND:
        raise _invalid(
            f"{name} is the tenant's inbox folder, not a connector one removes",
            "delete the files from the folder (their documents go with them), or pause it",
        )
    catalog.set_paused(tenant_id, instance.instance_id, True)  # no pass starts meanwhile
    removed = 0
    for source_id in catalog.source_ids(tenant_id, instance.instance_id):
        with contextlib.suppress(NotFound):  # deleted through another path already
            request_deletion(ports.catalog, ports.indexes(), tenant_id, source_id)
            removed += 1
    catalog.remove_instance(tenant_id, instance.instance_id)
    return removed
