"""`groundwork source add|list|pause|resume|sync|remove TENANT [NAME]`: a
tenant's connected sources. The rules are groundwork.services.connectors' (and
connector_sync's for `sync`, one pass now); this maps arguments and prints.
Credentials are references, never values: `--secret access_key_id=env:S3_KEY`."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings

if TYPE_CHECKING:
    from groundwork.services.connectors import ConnectorRequest
    from resources.composition.platform import Platform
    from resources.connectors.ports import ConnectorPlatform


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    source = subcommands.add_parser(
        "source", help="connect a tenant to a bucket, folder, site or repository"
    )
    source.add_argument("action", choices=["add", "list", "pause", "resume", "sync", "remove"])
    source.add_argument("tenant_id")
    source.add_argument("name", nargs="?")
    source.add_argument("--kind", choices=["s3", "fsspec", "web", "git"])
    source.add_argument(
        "--config", default="{}", help="the connector's settings as JSON (no secrets)"
    )
    source.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="NAME=env:VAR|file:/path",
        help="a credential by reference (repeatable)",
    )
    source.add_argument("--subjects", help="comma-separated subjects for items without their own")
    source.add_argument("--freshness", type=int, default=3600, help="seconds (freshness target)")
    source.add_argument("--interval", type=int, default=300, help="seconds between passes")
    source.add_argument("--json", action="store_true", help="print the state as JSON")
    source.set_defaults(func=run)


def _request(args: argparse.Namespace) -> ConnectorRequest:
    from groundwork.services.connectors import ConnectorRequest

    secrets = dict(item.split("=", 1) for item in args.secret if "=" in item)
    return ConnectorRequest(
        kind=args.kind or "",
        name=args.name or "",
        config=json.loads(args.config),
        secret_refs=secrets,
        subjects=args.subjects.split(",") if args.subjects else None,
        freshness_seconds=args.freshness,
        interval_seconds=args.interval,
    )


def _print(views: list[dict[str, object]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(views, indent=2))
        return
    for v in views:
        flag = " [yellow]paused[/]" if v["paused"] else ""
        late = " [red]behind[/]" if v["behind"] else ""
        console.print(
            f"{v['name']} ({v['kind']}, {v['instance_id']}){flag}{late}: pass {v['last_pass']}, "
            f"{v['items']} items, seen {v['seen']} changed {v['changed']} deleted {v['deleted']} "
            f"failed {v['failed']}; last error: {v['last_error'] or 'none'}"
        )


def _act(ports: ConnectorPlatform, args: argparse.Namespace) -> int:
    from groundwork.services import connectors as service

    tenant, name = args.tenant_id, args.name or ""
    if args.action == "list":
        _print([v.to_dict() for v in service.list_connectors(ports, tenant)], args.json)
    elif args.action == "add":
        view = service.add_connector(ports, tenant, _request(args))
        _print([view.to_dict()], args.json)
    elif args.action in ("pause", "resume"):
        view = service.pause_connector(ports, tenant, name, args.action == "pause")
        _print([view.to_dict()], args.json)
    elif args.action == "remove":
        removed = service.remove_connector(ports, tenant, name)
        console.print(f"removed {name}: {removed} documents deleted")
    return 0


def _sync(platform: Platform, ports: ConnectorPlatform, args: argparse.Namespace) -> int:
    from groundwork.services.connector_sync import sync_instance
    from resources.connectors.factory import build_connector

    catalog = ports.connector_catalog()
    instance = catalog.instance(args.tenant_id, args.name or "")
    if instance is None:
        console.print(f"[red]no connector {args.name!r}[/]")
        return 1
    report = sync_instance(platform, catalog, instance, build_connector)
    console.print(
        f"pass {report.pass_no}{' (resumed)' if report.resumed else ''}: seen {report.seen}, "
        f"changed {report.changed}, deleted {report.deleted}, moved {report.moved}, "
        f"rescoped {report.rescoped}, failed {report.failed}, reads {report.reads}"
    )
    for line in report.refused + report.errors:
        console.print(f"  [yellow]{line}[/]")
    if report.changed:
        platform.ingest_trigger().request_ingest(args.tenant_id)
    return 0 if report.finished else 1


def run(args: argparse.Namespace) -> int:
    from groundwork.errors import GroundworkError, NotFound, Refused
    from resources.composition.platform import connect
    from resources.connectors.ports import ConnectorPlatform

    if args.action not in ("list",) and not args.name:
        console.print(f"[red]source {args.action} needs a connector name[/]")
        return 2
    platform = connect(GroundworkSettings.from_env())
    try:
        view = platform.for_tenant(args.tenant_id)
        ports = ConnectorPlatform(view)
        if args.action == "sync":
            return _sync(view, ports, args)
        return _act(ports, args)
    except Refused as refused:
        console.print(f"[red]{refused.message}[/]; {refused.alternative}")
        return 1
    except NotFound as missing:
        console.print(f"[red]{missing}[/]")
        return 1
    except (GroundworkError, json.JSONDecodeError) as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    finally:
        platform.close()
