"""`groundwork eval`: score retrieval on a golden set (a tenant's own, BEIR or SQuAD)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from groundwork_cli.scoring import eval_platform, score_and_print
from groundwork_cli.terminal import console
from resources.composition.settings import GroundworkSettings


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluation = subcommands.add_parser(
        "eval", help="score retrieval on a golden set (a tenant's own, BEIR or SQuAD)"
    )
    evaluation.add_argument(
        "--golden", type=Path, help="a golden set (JSON Lines) for the tenant's own corpus"
    )
    evaluation.add_argument("--tenant", help="with --golden: the tenant whose corpus is scored")
    evaluation.add_argument("--beir", type=Path, help="a BEIR-format folder")
    evaluation.add_argument("--squad", type=Path, help="a SQuAD v1.1 JSON file instead")
    evaluation.add_argument("--sentences", type=Path, help="SciFact sentence-level evidence")
    evaluation.add_argument("--split", default="test")
    evaluation.add_argument("--model", help="comma-separated model keys (default: the default)")
    evaluation.add_argument("--limit-docs", type=int)
    evaluation.add_argument("--max-queries", type=int)
    evaluation.set_defaults(func=run)


def _eval_golden(args: argparse.Namespace, settings: GroundworkSettings) -> int:
    """Score a tenant's published corpus in place on its own golden set: the
    file is checked (bad rows refused with their line numbers), kept under
    GROUNDWORK_HOME as the tenant's suite, and retrieval_quality runs."""
    from dagster import DagsterInstance

    from evals.golden import GoldenSetError, load_golden
    from evals.workflow import keep_golden_suite

    if not args.tenant:
        console.print("[red]give the tenant whose published corpus is scored: --tenant T[/]")
        return 2
    try:
        golden = load_golden(args.golden)
    except (GoldenSetError, OSError) as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    with eval_platform(settings) as platform:
        tenant = platform.catalog.get_tenant(args.tenant)
        if tenant is None:
            console.print(f"[red]no tenant {args.tenant}[/]")
            return 1
        keep_golden_suite(
            platform.eval_runs, settings.home, args.tenant, args.golden, args.max_queries
        )
        models = args.model.split(",") if args.model else [tenant.active_model]
        console.print(
            f"{len(golden)} golden queries for {args.tenant}; scoring its published corpus"
        )
        return score_and_print(DagsterInstance.get(), platform.eval_runs, args.tenant, models)


def run(args: argparse.Namespace) -> int:
    """Score retrieval on a golden set. With --golden, a tenant's own set over
    its published corpus, in place. With --beir or --squad, the corpus is
    ingested as a tenant of its own through the Dagster assets, then the
    retrieval_quality asset scores it (the set converted into a golden set),
    stores the run and writes the HTML report; the table is printed here."""
    import tempfile

    from dagster import DagsterInstance

    from evals.evidence import write_squad_corpus
    from evals.retrieval import eval_tenant_id, write_corpus
    from evals.workflow import dataset_suite
    from groundwork_cli.ingest import ingest_tenants

    settings = GroundworkSettings.from_env()
    if args.golden is not None:
        return _eval_golden(args, settings)
    models = args.model.split(",") if args.model else [settings.default_model_key]
    folder: Path = args.beir
    split = args.split
    if args.squad is not None:
        folder = write_squad_corpus(
            args.squad, Path(tempfile.mkdtemp(prefix="squad-corpus-")), args.limit_docs
        )
        split = "dev"
    elif folder is None:
        console.print("[red]give --golden FILE --tenant T, --beir FOLDER or --squad FILE[/]")
        return 2
    sentences = args.sentences or (folder / "sentences")
    tenant_id = eval_tenant_id(args.squad or folder, args.limit_docs)
    with eval_platform(settings) as platform:
        platform.catalog.ensure_tenant(tenant_id, f"eval {folder.name}", models[0])
        suite = dataset_suite(
            folder, split, args.max_queries, args.limit_docs, sentences, args.squad
        )
        platform.eval_runs.set_suite(tenant_id, suite)
        documents = write_corpus(folder, settings.inbox_dir, tenant_id, limit=args.limit_docs)
        console.print(f"{documents} documents -> tenant {tenant_id}; ingesting through Dagster")
        instance = DagsterInstance.get()
        for model_key in models:
            started = time.monotonic()
            ingest_tenants(instance, [tenant_id], model_key, settings.inbox_dir)
            console.print(f"ingest with {model_key}: {time.monotonic() - started:.1f} s")
        return score_and_print(instance, platform.eval_runs, tenant_id, models)
