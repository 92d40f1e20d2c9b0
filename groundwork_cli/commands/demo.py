"""`groundwork demo`: start everything, ingest the sample corpus through Dagster,
score it on its golden sets and print search results with citations."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from typing import Any

import httpx
from rich.table import Table

from groundwork_cli.scoring import score_model
from groundwork_cli.terminal import console
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings

SAMPLES = PROJECT_ROOT / "samples"


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = subcommands.add_parser(
        "demo", help="start everything, ingest the sample corpus, print results"
    )
    demo.add_argument("--exit", action="store_true", help="stop after printing results")
    demo.set_defaults(func=run)


#: Demo API keys: who sees what in the sample corpus.
DEMO_PRINCIPALS = {
    "acme-staff": ("acme", ["tenant:acme"]),
    "acme-finance": ("acme", ["tenant:acme", "group:finance"]),
    "globex-staff": ("globex", ["tenant:globex"]),
    "initech-staff": ("initech", ["tenant:initech"]),
}

DEMO_QUERIES = [
    ("acme-staff", "What does ERR-4021 mean and how do I fix it?"),
    ("acme-staff", "What was revenue in Q3-2026?"),
    ("acme-staff", "How many vacation days do employees get?"),
    ("acme-staff", "What is the 2027 hiring budget?"),
    ("acme-finance", "What is the 2027 hiring budget?"),
    ("globex-staff", "What does ERR-4021 mean?"),
    # initech's files show each kind of location a citation carries
    ("initech-staff", "How much did the team offsite cost in August?"),  # a PDF table row
    ("initech-staff", "What is the Q2 2027 sales forecast for the Northeast region?"),  # cells
    ("initech-staff", "What ships in the second quarter of 2027?"),  # a slide
    ("initech-staff", "When does the parking garage on Elm Street close?"),  # a poor scan
]


def _demo_keys(settings: GroundworkSettings) -> dict[str, str]:
    """Create (once) and return demo API keys; kept in the local data dir only."""
    from groundwork.services.tenants import create_tenant, issue_key
    from resources.composition.platform import connect

    path = settings.home / "demo-keys.json"
    keys: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    platform = connect(settings)
    try:
        for name, (tenant_id, subjects) in DEMO_PRINCIPALS.items():
            create_tenant(
                platform.catalog, tenant_id, tenant_id.title(), settings.default_model_key
            )
            if name not in keys or platform.catalog.principal_for_key(keys[name]) is None:
                keys[name] = issue_key(
                    platform.catalog, tenant_id, subjects, f"demo {name}", None
                ).secret
    finally:
        platform.close()
    path.write_text(json.dumps(keys, indent=2))
    path.chmod(0o600)
    return keys


def _print_results(api: str, keys: dict[str, str]) -> None:
    with httpx.Client(base_url=api, timeout=30) as client:
        for principal, query in DEMO_QUERIES:
            started = time.perf_counter()
            response = client.post(
                "/v1/search",
                json={"query": query, "limit": 3},
                headers={"Authorization": f"Bearer {keys[principal]}"},
            )
            elapsed_ms = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            body = response.json()
            console.rule(
                f"[bold]{principal}[/]: {query}  [dim]({body['outcome']}, {elapsed_ms:.0f} ms)[/]"
            )
            if not body["hits"]:
                console.print(f"  {body['message']}")
                continue
            table = Table(show_header=True, header_style="bold", expand=True)
            table.add_column("#", width=2)
            table.add_column("passage", ratio=5)
            table.add_column("citation", ratio=3)
            for hit in body["hits"]:
                citation = hit["citation"]
                text = citation["untrusted_excerpt"].replace(
                    "\n", " "
                )  # the fenced text is for models
                table.add_row(
                    str(hit["rank"]),
                    (text[:220] + "…") if len(text) > 220 else text,
                    f"{citation['title']} ({hit['filename']})\n{citation['location_label']}"
                    f" · {' > '.join(citation['heading_path'])}\n"
                    f"[dim]{citation['source_version_id'][:16]} · legs {hit['leg_ranks']}[/]"
                    + (
                        "\n[yellow]low OCR confidence: check against the original[/]"
                        if citation.get("low_confidence")
                        else ""
                    ),
                )
            console.print(table)


def run(args: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    from groundwork_cli.ingest import ingest_tenants
    from groundwork_cli.supervisor import AlreadyRunning, Supervisor

    settings = GroundworkSettings.from_env()
    supervisor = Supervisor(settings)
    try:
        supervisor.start_engines()
    except AlreadyRunning as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    try:
        tenants = sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())
        for tenant_id in tenants:
            shutil.copytree(SAMPLES / tenant_id, settings.inbox_dir / tenant_id, dirs_exist_ok=True)
        console.print(
            f"Sample corpus copied to the inbox {settings.inbox_dir} ({', '.join(tenants)})"
        )
        keys = _demo_keys(settings)
        instance = DagsterInstance.get()
        started = time.monotonic()
        summary = ingest_tenants(
            instance, tenants, settings.default_model_key, inbox_dir=settings.inbox_dir
        )
        elapsed = time.monotonic() - started
        for tenant_id, stages in summary.items():
            registrations: dict[str, Any] = stages.get("source_registrations", {})  # type: ignore[assignment]
            extraction: dict[str, Any] = stages.get("extracted_documents", {})  # type: ignore[assignment]
            chunking: dict[str, Any] = stages.get("chunks", {})  # type: ignore[assignment]
            published: dict[str, Any] = stages.get("published_index", {})  # type: ignore[assignment]
            console.print(
                f"[bold]{tenant_id}[/]: {registrations.get('sources')} sources, "
                f"{extraction.get('processed')} extracted, {extraction.get('failed')} failed (as values), "
                f"{chunking.get('chunks_total')} chunks, {published.get('live_chunks')} live; "
                f"stores agree: {stages.get('check:stores_agree')}"
            )
        console.print(f"Ingest through Dagster took {elapsed:.1f} s")
        _demo_golden_scores(settings, tenants)
        supervisor.start_services()
        api = f"http://127.0.0.1:{settings.api_port}"
        _print_results(api, keys)
        console.print(
            f"\nRetrieval API: {api}/docs   Dagster UI: http://127.0.0.1:{settings.dagster_port}   "
            f"MCP (streamable HTTP, bearer key): http://127.0.0.1:{settings.mcp_port}/mcp\n"
            f"Demo API keys: {settings.home / 'demo-keys.json'}\n"
            f"Drop files into {settings.inbox_dir}/<tenant>/ and the inbox sensor ingests them."
        )
        if not args.exit:
            supervisor.wait_for_interrupt()
        else:
            _wait_for_runs(instance)
        return 0
    finally:
        supervisor.stop()


#: runs that still hold a launcher's worker: stopping under them fails them
ACTIVE_RUNS = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")


def _wait_for_runs(instance: Any, timeout: float = 180.0, settle: float = 6.0) -> None:
    """--exit stops only when the runs the demo caused are over (and none was
    requested for `settle` seconds): stopping the launcher under a run that had
    just started left it "Failed to start" and the UI red."""
    from dagster import DagsterRunStatus, RunsFilter

    statuses = [DagsterRunStatus[name] for name in ACTIVE_RUNS]
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        active = instance.get_runs_count(RunsFilter(statuses=statuses))
        if active:
            console.print(f"[dim]waiting for {active} Dagster run(s) to finish before stopping[/]")
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settle:
            return
        time.sleep(2)
    console.print(f"[yellow]runs still active after {timeout:.0f} s; stopping anyway[/]")


def _demo_golden_scores(settings: GroundworkSettings, tenants: list[str]) -> None:
    """Score each sample tenant on its hand-written golden set
    (samples/<tenant>.golden.jsonl) through retrieval_quality; print the figures."""
    from dagster import DagsterInstance

    from evals.golden import load_golden
    from evals.workflow import keep_golden_suite
    from resources.composition.platform import connect

    platform = connect(settings)
    try:
        instance = DagsterInstance.get()
        for tenant_id in tenants:
            golden = SAMPLES / f"{tenant_id}.golden.jsonl"
            if not golden.is_file():
                continue
            count = len(load_golden(golden))
            keep_golden_suite(platform.eval_runs, settings.home, tenant_id, golden, None)
            score = score_model(instance, platform.eval_runs, tenant_id, settings.default_model_key)
            if score.failure is not None or score.run is None:
                console.print(f"[red]{tenant_id}: {score.failure}[/]")
                continue
            console.rule(f"[bold]{tenant_id}[/]: golden set, {count} queries ({golden.name})")
            console.print(_golden_summary(score.run.results, score.found), soft_wrap=True)
    finally:
        platform.close()


def _golden_summary(results: dict[str, Any], found: dict[str, object]) -> str:
    """A sample tenant's scores in a few lines: the demo shows them, `groundwork
    eval` prints everything."""
    ndcg = "  ".join(f"{r['mode']} {float(r['ndcg_at_10']):.3f}" for r in results["relevance"])
    grounded = "; ".join(
        f"evidence inside the context ({g.get('layer', 'raw')}) {g['grounded']}/{g['items']}"
        for g in results["groundedness"]
    )
    c = results["citations"]
    answers = results.get("answers", {})
    judged = ", ".join(f"{k} {v:.3f}" for k, v in answers.get("metrics", {}).items())
    if not judged:
        judged = "skipped (" + next(iter(answers.get("skipped", {}).values()), "") + ")"
    return (
        f"  nDCG@10: {ndcg}\n  {grounded}; citations verified {c['verified']}/{c['checked']}"
        f"\n  judged answers: {judged}\n  relevance_gate passed: "
        f"{found.get('check:relevance_gate')}, relevance_regression passed: "
        f"{found.get('check:relevance_regression')}\n"
        f"  report: {found.get('report')}\n  per-query results: {found.get('per_query')}"
    )
