"""`groundwork model switch|rollback TENANT [MODEL]`: the serving embedding model."""

from __future__ import annotations

import argparse

from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    model = subcommands.add_parser(
        "model", help="switch a tenant's serving embedding model, or roll back"
    )
    model.add_argument("action", choices=["switch", "rollback"])
    model.add_argument("tenant_id")
    model.add_argument("model", nargs="?", default="")
    model.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Switch a tenant's serving model (gated) or roll back to the previous one."""
    from evals.publication_gate import eval_gate_reasons
    from groundwork.model_cutover import SwitchRefused, rollback_model, switch_model
    from resources.composition.platform import connect

    platform = connect(GroundworkSettings.from_env())
    try:
        if args.action == "rollback":
            done = rollback_model(platform.catalog, args.tenant_id)
            console.print(
                f"{args.tenant_id}: serving {done.to_model} again (was {done.from_model})"
            )
            return 0
        tenant = platform.catalog.get_tenant(args.tenant_id)
        gate = (
            eval_gate_reasons(platform.eval_runs, args.tenant_id, args.model, tenant.active_model)
            if tenant
            else ()
        )
        outcome = switch_model(
            platform.catalog,
            platform.vector_index(args.model),
            platform.keywords,
            args.tenant_id,
            extra_gate=gate,
        )
        if isinstance(outcome, SwitchRefused):
            console.print("[red]refused:[/] " + "; ".join(outcome.reasons))
            console.print(
                f"Backfill the {args.tenant_id} x {args.model} partition of `embeddings` and `published_index` first."
            )
            return 1
        console.print(f"{args.tenant_id}: serving {outcome.to_model} (was {outcome.from_model})")
        return 0
    finally:
        platform.close()
