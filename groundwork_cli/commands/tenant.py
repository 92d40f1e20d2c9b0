"""`groundwork tenant create|erase|limits|system-corpus TENANT` and
`groundwork tenant create-system`: the rules are the tenants service's, the
lifecycle's, the limits service's and the tenant wall's; this maps arguments
and prints. `limits` with no flag shows the tenant's limits and usage; each
flag sets one (`none` clears it: no limit) and leaves the others as they are.
`system-corpus` shows whether the tenant reads the shared system corpus;
`--on`/`--off` sets it. `create-system` makes the reserved tenant `system`
that owns the system corpus (its keys write only with system:admin)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings

if TYPE_CHECKING:
    from resources.composition.platform import Platform


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tenant = subcommands.add_parser("tenant", help="create a tenant")
    tenant.add_argument(
        "action", choices=["create", "erase", "limits", "system-corpus", "create-system"]
    )
    tenant.add_argument("tenant_id", nargs="?", default="")
    tenant.add_argument("--name")
    switch = tenant.add_mutually_exclusive_group()
    switch.add_argument("--on", dest="system_corpus", action="store_const", const=True)
    switch.add_argument("--off", dest="system_corpus", action="store_const", const=False)
    for flag, kind in LIMIT_FLAGS.items():
        tenant.add_argument(f"--{flag}", type=_limit(kind), metavar="N|none", default=_UNSET)
    tenant.set_defaults(func=run)


#: limits: a flag per limit (groundwork.services.limits names them with '_')
LIMIT_FLAGS: dict[str, type] = {
    "requests-per-second": float,
    "burst": int,
    "key-requests-per-second": float,
    "key-burst": int,
    "max-documents": int,
    "max-bytes": int,
}
_UNSET = object()


def _limit(kind: type) -> Callable[[str], float | int | None]:
    def parse(text: str) -> float | int | None:
        return None if text.lower() == "none" else kind(text)

    return parse


def _limits(platform: Platform, args: argparse.Namespace) -> int:
    from groundwork.errors import Refused
    from groundwork.services.limits import LIMIT_NAMES, change_limits, tenant_limits

    changes = {
        flag.replace("-", "_"): getattr(args, flag.replace("-", "_"))
        for flag in LIMIT_FLAGS
        if getattr(args, flag.replace("-", "_")) is not _UNSET
    }
    try:
        view = (
            change_limits(platform, args.tenant_id, changes)
            if changes
            else tenant_limits(platform, args.tenant_id)
        )
    except Refused as refused:
        console.print(f"[red]{refused.message}[/]; {refused.alternative}")
        return 1
    for name in LIMIT_NAMES:
        value = getattr(view.limits, name)
        console.print(f"{name}: {'no limit' if value is None else value}")
    console.print(f"usage: {view.usage.documents} documents, {view.usage.bytes} bytes")
    return 0


def _system_corpus(platform: Platform, args: argparse.Namespace) -> int:
    from groundwork.errors import Refused
    from groundwork.services.tenant_wall import set_system_corpus, system_corpus_enabled

    try:
        enabled = (
            system_corpus_enabled(platform, args.tenant_id)
            if args.system_corpus is None
            else set_system_corpus(platform, args.tenant_id, args.system_corpus)
        )
    except Refused as refused:
        console.print(f"[red]{refused.message}[/]; {refused.alternative}")
        return 1
    console.print(f"{args.tenant_id} reads the system corpus: {'on' if enabled else 'off'}")
    return 0


def run(args: argparse.Namespace) -> int:
    from groundwork.errors import Refused
    from groundwork.lifecycle import erase_tenant
    from groundwork.services.tenants import create_system_tenant, create_tenant
    from resources.composition.platform import connect

    if not args.tenant_id and args.action != "create-system":
        console.print(f"[red]tenant {args.action} needs a tenant id[/]")
        return 2
    settings = GroundworkSettings.from_env()
    platform = connect(settings)
    try:
        if args.action == "limits":
            return _limits(platform, args)
        if args.action == "system-corpus":
            return _system_corpus(platform, args)
        if args.action == "create-system":
            made = create_system_tenant(platform.catalog, settings.default_model_key)
            console.print(
                f"tenant {made.tenant_id} owns the system corpus (model {made.active_model}); "
                f"its keys write only with system:admin"
            )
            return 0
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
                staging=platform.upload_staging(),
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
