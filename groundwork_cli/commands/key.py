"""`groundwork key create|list|revoke|rotate TENANT [KEY_ID]`."""

from __future__ import annotations

import argparse

from groundwork.ports import DEFAULT_KEY_SCOPES
from groundwork.services.scopes import ALL_SCOPES
from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    key = subcommands.add_parser(
        "key",
        help="create (printed once; only its hash is stored), list, revoke or rotate API keys",
    )
    key.add_argument("action", choices=["create", "list", "revoke", "rotate"])
    key.add_argument("tenant_id")
    key.add_argument("key_id", nargs="?", help="the key to revoke or rotate")
    key.add_argument("--subject", action="append", help="a subject the key acts as (repeatable)")
    key.add_argument("--label", default="")
    key.add_argument(
        "--scope",
        action="append",
        help="what the key may do (one of "
        + ", ".join(ALL_SCOPES)
        + ") (repeatable; default: "
        + ", ".join(DEFAULT_KEY_SCOPES)
        + "; sources:admin re-scopes sources, artifacts:approve approves destructive edits)",
    )
    key.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """create prints the secret once; list shows subjects and scopes but never a
    secret or its hash; revoke holds from the next request; rotate revokes and
    creates a key with the same subjects, scopes and label in one transaction.
    The rules are the tenants service's; this maps arguments and prints."""
    from groundwork.errors import Refused
    from groundwork.services import tenants as keys
    from resources.composition.platform import connect

    if args.action in ("revoke", "rotate") and not args.key_id:
        console.print(f"[red]give the key id: groundwork key {args.action} TENANT KEY_ID[/]")
        return 2
    settings = GroundworkSettings.from_env()
    platform = connect(settings)
    directory = platform.catalog
    try:
        if args.action == "list":
            listed = keys.list_keys(directory, args.tenant_id)
            # plain tab-separated lines: readable, and safe to pipe into other tools
            print("key_id\tstate\tlabel\tsubjects\tscopes\tcreated")
            for info in listed:
                state = f"revoked {info.revoked_at:%Y-%m-%d %H:%M}" if info.revoked_at else "active"
                print(
                    f"{info.key_id}\t{state}\t{info.label}\t{','.join(info.subjects)}\t"
                    f"{','.join(info.scopes)}\t{info.created_at:%Y-%m-%d %H:%M}"
                )
        elif args.action == "revoke":
            keys.revoke_key(directory, args.tenant_id, args.key_id)
            console.print(f"revoked {args.key_id}; it no longer authenticates")
        elif args.action == "rotate":
            issued = keys.rotate_key(directory, args.tenant_id, args.key_id)
            console.print(
                f"revoked {args.key_id}; new key {issued.key_id} (same subjects and scopes)"
            )
            print(issued.secret)
        else:
            issued = keys.issue_key(directory, args.tenant_id, args.subject, args.label, args.scope)
            console.print(
                f"key {issued.key_id} for {args.tenant_id} with subjects {list(issued.subjects)}, "
                f"scopes {list(issued.scopes)}"
            )
            print(issued.secret)
    except Refused as refused:
        console.print(f"[red]{refused.message}[/]; {refused.alternative}")
        return 1
    finally:
        platform.close()
    return 0
