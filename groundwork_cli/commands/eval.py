"""`groundwork eval`: score retrieval on a golden set (a tenant's own, BEIR or SQuAD)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from groundwork_cli.scoring import gate_refusals, print_eval_run, register_golden, report_refusals
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
    import os

    from dagster import DagsterInstance

    from evals.golden import GoldenSetError, load_golden
    from groundwork_cli.ingest import evaluate_partition
    from resources.composition.platform import connect, ensure_engines
    from resources.dagster_glue.instance import write_instance_config
    from resources.postgres.eval_runs import PostgresEvalRuns

    if not args.tenant:
        console.print("[red]give the tenant whose published corpus is scored: --tenant T[/]")
        return 2
    try:
        golden = load_golden(args.golden)
    except (GoldenSetError, OSError) as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    endpoints = ensure_engines(settings)
    write_instance_config(settings.dagster_home, endpoints.server_url)
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)
    platform = connect(settings, endpoints)
    try:
        tenant = platform.catalog.get_tenant(args.tenant)
        if tenant is None:
            console.print(f"[red]no tenant {args.tenant}[/]")
            return 1
        runs = PostgresEvalRuns(platform.pool)
        register_golden(runs, settings, args.tenant, args.golden, args.max_queries)
        models = args.model.split(",") if args.model else [tenant.active_model]
        console.print(
            f"{len(golden)} golden queries for {args.tenant}; scoring its published corpus"
        )
        instance = DagsterInstance.get()
        if not instance.has_dynamic_partition("tenant", args.tenant):
            instance.add_dynamic_partitions("tenant", [args.tenant])
        refused: list[str] = []
        for model_key in models:
            found = evaluate_partition(instance, args.tenant, model_key)
            run = runs.latest(args.tenant, model_key)
            if run is None or "status" in found:
                console.print(f"[red]{model_key}: {found.get('status', 'no run stored')}[/]")
                return 1
            print_eval_run(model_key, run.results, found)
            refused += gate_refusals(model_key, found)
    finally:
        platform.close()
    return report_refusals(refused)


def run(args: argparse.Namespace) -> int:
    """Score retrieval on a golden set. With --golden, a tenant's own set over
    its published corpus, in place. With --beir or --squad, the corpus is
    ingested as a tenant of its own through the Dagster assets, then the
    retrieval_quality asset scores it (the set converted into a golden set),
    stores the run and writes the HTML report; the table is printed here."""
    import os
    import tempfile

    from dagster import DagsterInstance

    from evals.evidence import write_squad_corpus
    from evals.retrieval import eval_tenant_id, write_corpus
    from evals.suite import EvalSuite
    from groundwork_cli.ingest import evaluate_partition, ingest_tenants
    from resources.composition.platform import connect, ensure_engines
    from resources.dagster_glue.instance import write_instance_config
    from resources.postgres.eval_runs import PostgresEvalRuns

    settings = GroundworkSettings.from_env()
    if args.golden is not None:
        return _eval_golden(args, settings)
    endpoints = ensure_engines(settings)
    write_instance_config(settings.dagster_home, endpoints.server_url)
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)
    models = args.model.split(",") if args.model else [settings.default_model_key]
    folder: Path = args.beir
    squad_file: str | None = None
    split = args.split
    if args.squad is not None:
        folder = write_squad_corpus(
            args.squad, Path(tempfile.mkdtemp(prefix="squad-corpus-")), args.limit_docs
        )
        squad_file, split = str(args.squad.resolve()), "dev"
    elif folder is None:
        console.print("[red]give --golden FILE --tenant T, --beir FOLDER or --squad FILE[/]")
        return 2
    sentences = args.sentences or (folder / "sentences")
    tenant_id = eval_tenant_id(args.squad or folder, args.limit_docs)
    platform = connect(settings, endpoints)
    try:
        platform.catalog.ensure_tenant(tenant_id, f"eval {folder.name}", models[0])
        suite = EvalSuite(
            beir_folder=str(folder.resolve()),
            split=split,
            max_queries=args.max_queries,
            limit_docs=args.limit_docs,
            sentences_folder=str(sentences.resolve()) if sentences.is_dir() else None,
            squad_file=squad_file,
        )
        PostgresEvalRuns(platform.pool).set_suite(tenant_id, suite)
        documents = write_corpus(folder, settings.inbox_dir, tenant_id, limit=args.limit_docs)
        console.print(f"{documents} documents -> tenant {tenant_id}; ingesting through Dagster")
        instance = DagsterInstance.get()
        for model_key in models:
            started = time.monotonic()
            ingest_tenants(instance, [tenant_id], model_key)
            console.print(f"ingest with {model_key}: {time.monotonic() - started:.1f} s")
        refused: list[str] = []
        for model_key in models:
            started = time.monotonic()
            console.print(f"evaluating {model_key} (retrieval_quality asset) ...")
            found = evaluate_partition(instance, tenant_id, model_key)
            run = PostgresEvalRuns(platform.pool).latest(tenant_id, model_key)
            assert run is not None
            print_eval_run(model_key, run.results, found)
            refused += gate_refusals(model_key, found)
            console.print(f"eval wall time {time.monotonic() - started:.1f} s")
    finally:
        platform.close()
    return report_refusals(refused)
