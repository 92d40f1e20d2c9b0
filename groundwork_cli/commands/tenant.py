"""`groundwork tenant create|erase TENANT`: the rules are the tenants service's
and the lifecycle's; this maps arguments and prints."""

from __future__ import annotations

import argparse

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tenant = subcommands.add_parser("tenant", help="create a tenant")
    tenant.add_argument("action", choices=["create", "erase"])
    tenant.add_argument("tenant_id")
    tenant.add_argument("--name")
    tenant.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from groundwork.errors import Refused
    from groundwork.lifecycle import erase_tenant
    from groundwork.services.tenants import create_tenant
    from resources.composition.platform import connect

    settings = GroundworkSettings.from_env()
    platform = connect(settings)
    try:
        if args.action == "erase":
            if platform.catalog.get_tenant(args.tenant_id) is None:
                console.print(f"[red]no tenant {args.tenant_id}[/]")
                return 1
            removed = erase_tenant(
                platform.catalog,
                platform.indexes(),
                platform.blobs,
                args.tenant_id,
                inbox_root=settings.inbox_dir,
            )
            console.print(f"erased {args.tenant_id}: {removed}")
            return 0
        try:
            tenant = create_tenant(
                platform.catalog,
                args.tenant_id,
                args.name or args.tenant_id,
                settings.default_model_key,
            )
        except Refused as refused:
            console.print(f"[red]{refused.message}[/]; {refused.alternative}")
            return 1
        console.print(f"tenant {tenant.tenant_id} (model {tenant.active_model})")
    finally:
        platform.close()
    return 0
