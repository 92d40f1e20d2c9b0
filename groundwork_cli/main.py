"""`groundwork` CLI. The README's first command runs `groundwork demo`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from groundwork.ports import DEFAULT_KEY_SCOPES
from groundwork.services.scopes import ALL_SCOPES
from resources.composition.settings import PROJECT_ROOT, GroundworkSettings

console = Console()
SAMPLES = PROJECT_ROOT / "samples"

#: Demo API keys: who sees what in the sample corpus.
DEMO_PRINCIPALS = {
    "acme-staff": ("acme", ["tenant:acme"]),
    "acme-finance": ("acme", ["tenant:acme", "group:finance"]),
    "globex-staff": ("globex", ["tenant:globex"]),
}

DEMO_QUERIES = [
    ("acme-staff", "What does ERR-4021 mean and how do I fix it?"),
    ("acme-staff", "What was revenue in Q3-2026?"),
    ("acme-staff", "How many vacation days do employees get?"),
    ("acme-staff", "What is the 2027 hiring budget?"),
    ("acme-finance", "What is the 2027 hiring budget?"),
    ("globex-staff", "What does ERR-4021 mean?"),
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
                    f"[dim]{citation['source_version_id'][:16]} · legs {hit['leg_ranks']}[/]",
                )
            console.print(table)


def cmd_demo(args: argparse.Namespace) -> int:
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
        summary = ingest_tenants(instance, tenants, settings.default_model_key)
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
        return 0
    finally:
        supervisor.stop()


def cmd_up(args: argparse.Namespace) -> int:
    from groundwork_cli.supervisor import AlreadyRunning, Supervisor

    supervisor = Supervisor(GroundworkSettings.from_env())
    try:
        supervisor.start_engines()
    except AlreadyRunning as exc:
        console.print(f"[red]{exc}[/]")
        return 1
    try:
        supervisor.start_services()
        supervisor.wait_for_interrupt()
        return 0
    finally:
        supervisor.stop()


def cmd_engines(args: argparse.Namespace) -> int:
    from resources.composition.platform import embedded_opensearch, ensure_engines
    from resources.engines.postgres import EmbeddedPostgres

    settings = GroundworkSettings.from_env()
    if args.action == "start":
        endpoints = ensure_engines(settings)
        console.print(f"PostgreSQL: {endpoints.server_url}\nOpenSearch: {endpoints.opensearch_url}")
    elif args.action == "stop":
        embedded_opensearch(settings).stop()
        EmbeddedPostgres(settings.pgdata).stop()
        console.print("stopped")
    else:
        console.print(
            f"PostgreSQL running: {EmbeddedPostgres(settings.pgdata).is_running()}\n"
            f"OpenSearch running: {embedded_opensearch(settings).is_running()}"
        )
    return 0


def cmd_tenant(args: argparse.Namespace) -> int:
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


def cmd_key(args: argparse.Namespace) -> int:
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


def cmd_upload(args: argparse.Namespace) -> int:
    """Upload a file in parts with a progress bar; an interrupted upload resumes
    from the server's acknowledged offset when the same command runs again."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    settings = GroundworkSettings.from_env()
    api = args.api or f"http://127.0.0.1:{settings.api_port}"
    path: Path = args.file
    size = path.stat().st_size
    state_file = settings.home / "upload-state.json"
    state: dict[str, str] = json.loads(state_file.read_text()) if state_file.exists() else {}
    fingerprint = f"{path.resolve()}|{size}|{path.stat().st_mtime_ns}"
    headers = {"Authorization": f"Bearer {args.key}"}
    with httpx.Client(base_url=api, headers=headers, timeout=60) as client:
        upload_id = state.get(fingerprint)
        received = 0
        if upload_id:
            progress_response = client.get(f"/v1/uploads/{upload_id}")
            if progress_response.status_code == 200 and progress_response.json()["state"] == "open":
                received = progress_response.json()["received"]
                console.print(f"resuming {path.name} at byte {received}")
            else:
                upload_id = None
        if not upload_id:
            created = client.post(
                "/v1/uploads", json={"filename": path.name, "size": size, "subjects": args.subject}
            )
            if created.status_code != 201:
                console.print(f"[red]{created.json()['message']}[/]")
                return 1
            upload_id = created.json()["upload_id"]
            state[fingerprint] = upload_id
            settings.home.mkdir(parents=True, exist_ok=True)
            state_file.write_text(json.dumps(state))
        part = 4 * 1024 * 1024
        with Progress(
            "[bold]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn()
        ) as bar:
            task = bar.add_task(path.name, total=size, completed=received)
            with open(path, "rb") as handle:
                handle.seek(received)
                while received < size:
                    chunk = handle.read(part)
                    try:
                        response = client.put(
                            f"/v1/uploads/{upload_id}", params={"offset": received}, content=chunk
                        )
                    except httpx.HTTPError as exc:
                        console.print(
                            f"[red]interrupted ({exc}); run the same command again to resume[/]"
                        )
                        return 1
                    if response.status_code != 200:
                        console.print(f"[red]{response.json()['message']}[/]")
                        return 1
                    received = response.json()["received"]
                    handle.seek(received)
                    bar.update(task, completed=received)
        done = client.post(f"/v1/uploads/{upload_id}/complete")
        if done.status_code != 200:
            console.print(f"[red]{done.json()['message']}[/]")
            return 1
        state.pop(fingerprint, None)
        state_file.write_text(json.dumps(state))
        console.print(
            f"uploaded {path.name}: source {done.json()['source_id']}, version {done.json()['version_id']}"
        )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    settings = GroundworkSettings.from_env()
    api = args.api or f"http://127.0.0.1:{settings.api_port}"
    response = httpx.post(
        f"{api}/v1/search",
        json={
            "query": args.query,
            "limit": args.limit,
            "mode": args.mode,
            "layer": args.layer,
        },
        headers={"Authorization": f"Bearer {args.key}"},
        timeout=30,
    )
    console.print_json(response.text)
    return 0 if response.status_code == 200 else 1


def cmd_model(args: argparse.Namespace) -> int:
    """Switch a tenant's serving model (gated) or roll back to the previous one."""
    from evals.publication_gate import eval_gate_reasons
    from groundwork.model_cutover import SwitchRefused, rollback_model, switch_model
    from resources.composition.platform import connect
    from resources.postgres.eval_runs import PostgresEvalRuns

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
            eval_gate_reasons(
                PostgresEvalRuns(platform.pool), args.tenant_id, args.model, tenant.active_model
            )
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


def summary_first_line(results: dict[str, Any]) -> str:
    """Summary-first search beside raw-chunk search (both hybrid + reranker):
    nDCG@10 and groundedness, and the difference, whichever way it goes."""
    ndcg = {r["mode"]: float(r["ndcg_at_10"]) for r in results["relevance"]}
    grounded = {g.get("layer", "raw"): float(g["rate"]) for g in results["groundedness"]}
    if "summary_first" not in ndcg or "hybrid+rerank" not in ndcg:
        return "summary_first: not measured in this run"
    line = (
        f"summary_first vs raw (hybrid+rerank): nDCG@10 {ndcg['summary_first']:.3f} vs "
        f"{ndcg['hybrid+rerank']:.3f} ({ndcg['summary_first'] - ndcg['hybrid+rerank']:+.3f})"
    )
    if "summary_first" in grounded and "raw" in grounded:
        line += (
            f"; groundedness {grounded['summary_first']:.3f} vs {grounded['raw']:.3f} "
            f"({grounded['summary_first'] - grounded['raw']:+.3f})"
        )
    return line


def print_eval_run(model_key: str, results: dict[str, Any], found: dict[str, object]) -> None:
    """An eval run as the CLI prints it: relevance, both groundedness measures,
    citations, ragas, the checks and where the report and per-query file are."""
    from evals.fusion_cv import CrossValidation, format_cross_validation
    from evals.retrieval import format_table

    print(format_table(model_key, results["relevance"]))
    print(summary_first_line(results))
    for g in results["groundedness"]:
        print(
            f"groundedness (evidence in context) {g['dataset']}, {g.get('layer', 'raw')} search: "
            f"{g['rate']:.3f} of {g['items']} items inside a {g['budget_tokens']}-token context "
            f"(document in hits {g['doc_in_hits_rate']:.3f})"
        )
    c = results["citations"]
    print(f"citation correctness: {c['verified']}/{c['checked']} = {c['rate']:.3f}")
    for miss in c["misses"][:10]:
        print(f"  miss: {miss}")
    for section, label in ((results["ragas"], "ragas"), (results.get("answers", {}), "answers")):
        for name, value in section.get("metrics", {}).items():
            print(f"{label} {name}: {value:.3f}")
        for name, why in section.get("skipped", {}).items():
            print(f"{label} {name}: skipped ({why})")
    cv = results.get("cross_validation", {})
    if "skipped" in cv:
        print(f"cross-validated fusion: skipped ({cv['skipped']})")
    elif cv:
        print(format_cross_validation(model_key, CrossValidation.from_summary(cv)))
    for check in ("relevance_gate", "relevance_regression"):
        passed = found.get(f"check:{check}")
        reasons = str(found.get(f"check:{check}:reasons", "") or "")
        print(f"{check} passed: {passed}" + ("" if passed else f" ({reasons})"))
    print(f"report: {found.get('report')}")
    print(f"per-query results: {found.get('per_query')}")


def gate_refusals(model_key: str, found: dict[str, object]) -> list[str]:
    """The blocking check's refusal of this model, if it refused (a check that
    did not run is not a pass, but the run's own failure is reported before)."""
    if found.get("check:relevance_gate") is False:
        reasons = str(found.get("check:relevance_gate:reasons", "") or "")
        return [f"{model_key}: {reasons or 'the relevance gate failed'}"]
    return []


def report_refusals(refused: list[str]) -> int:
    """Exit 1 when a gate refused a model (its scores are stored and printed
    above), so a script or CI run stops there; 0 otherwise."""
    for line in refused:
        console.print(f"[red]relevance gate refused {line}[/]")
    return 1 if refused else 0


def register_golden(
    runs: Any, settings: GroundworkSettings, tenant_id: str, golden: Path, max_queries: int | None
) -> Path:
    """Keep a checked golden set under GROUNDWORK_HOME (the suite must not depend
    on where the file was) and make it the tenant's eval suite."""
    from evals.suite import EvalSuite

    kept = settings.home / "eval-golden" / f"{tenant_id}.jsonl"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(golden.read_text(encoding="utf-8"), encoding="utf-8")
    runs.set_suite(tenant_id, EvalSuite(golden_file=str(kept), max_queries=max_queries))
    return kept


def _demo_golden_scores(settings: GroundworkSettings, tenants: list[str]) -> None:
    """Score each sample tenant on its hand-written golden set
    (samples/<tenant>.golden.jsonl) through retrieval_quality; print the figures."""
    from dagster import DagsterInstance

    from evals.golden import load_golden
    from groundwork_cli.ingest import evaluate_partition
    from resources.composition.platform import connect
    from resources.postgres.eval_runs import PostgresEvalRuns

    platform = connect(settings)
    try:
        runs = PostgresEvalRuns(platform.pool)
        instance = DagsterInstance.get()
        for tenant_id in tenants:
            golden = SAMPLES / f"{tenant_id}.golden.jsonl"
            if not golden.is_file():
                continue
            count = len(load_golden(golden))
            register_golden(runs, settings, tenant_id, golden, None)
            model_key = settings.default_model_key
            found = evaluate_partition(instance, tenant_id, model_key)
            run = runs.latest(tenant_id, model_key)
            if run is None or "status" in found:
                console.print(f"[red]{tenant_id}: {found.get('status', 'no eval run stored')}[/]")
                continue
            results = run.results
            ndcg = "  ".join(
                f"{r['mode']} {float(r['ndcg_at_10']):.3f}" for r in results["relevance"]
            )
            grounded = "; ".join(
                f"evidence inside the context ({g.get('layer', 'raw')}) {g['grounded']}/{g['items']}"
                for g in results["groundedness"]
            )
            c = results["citations"]
            answers = results.get("answers", {})
            judged = ", ".join(f"{k} {v:.3f}" for k, v in answers.get("metrics", {}).items())
            if not judged:
                judged = "skipped (" + next(iter(answers.get("skipped", {}).values()), "") + ")"
            console.rule(f"[bold]{tenant_id}[/]: golden set, {count} queries ({golden.name})")
            console.print(
                f"  nDCG@10: {ndcg}\n  {grounded}; citations verified {c['verified']}/{c['checked']}"
                f"\n  judged answers: {judged}\n  relevance_gate passed: "
                f"{found.get('check:relevance_gate')}, relevance_regression passed: "
                f"{found.get('check:relevance_regression')}\n"
                f"  report: {found.get('report')}\n  per-query results: {found.get('per_query')}",
                soft_wrap=True,
            )
    finally:
        platform.close()


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


def cmd_eval(args: argparse.Namespace) -> int:
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


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the tools over MCP: stdio (the key from --key or GROUNDWORK_API_KEY is
    the principal) or, with --http, streamable HTTP (a bearer key per request)."""
    import os

    from agent_tools.mcp_server import http_app, run_stdio
    from groundwork.tools.dispatch import ToolDispatcher
    from resources.composition.platform import connect

    settings = GroundworkSettings.from_env()
    platform = connect(settings, serving=True)
    dispatcher = ToolDispatcher(lambda: platform)
    try:
        if args.http:
            import uvicorn

            uvicorn.run(http_app(dispatcher), host="127.0.0.1", port=args.port, log_level="warning")
            return 0
        key = args.key or os.environ.get("GROUNDWORK_API_KEY", "")
        if not key or dispatcher.principal(key) is None:
            print("give a valid API key: --key KEY or GROUNDWORK_API_KEY", file=sys.stderr)
            return 2
        run_stdio(dispatcher, key)
        return 0
    finally:
        platform.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groundwork", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="start everything, ingest the sample corpus, print results")
    demo.add_argument("--exit", action="store_true", help="stop after printing results")
    demo.set_defaults(func=cmd_demo)
    sub.add_parser("up", help="start engines, Dagster and the API until Ctrl-C").set_defaults(
        func=cmd_up
    )
    engines = sub.add_parser("engines", help="start, stop or show the embedded engines")
    engines.add_argument("action", choices=["start", "stop", "status"])
    engines.set_defaults(func=cmd_engines)
    tenant = sub.add_parser("tenant", help="create a tenant")
    tenant.add_argument("action", choices=["create", "erase"])
    tenant.add_argument("tenant_id")
    tenant.add_argument("--name")
    tenant.set_defaults(func=cmd_tenant)
    key = sub.add_parser(
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
    key.set_defaults(func=cmd_key)
    upload = sub.add_parser("upload", help="upload a file (resumable, with a progress bar)")
    upload.add_argument("file", type=Path)
    upload.add_argument("--key", required=True)
    upload.add_argument(
        "--subject", action="append", help="who may read it (repeatable; default: the key's own)"
    )
    upload.add_argument("--api")
    upload.set_defaults(func=cmd_upload)
    search = sub.add_parser("search", help="query the running API")
    search.add_argument("query")
    search.add_argument("--key", required=True)
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    search.add_argument(
        "--layer",
        choices=["raw", "summary", "summary_first"],
        default="raw",
        help="summary: compiled summary pages; summary_first: summaries pick the sources",
    )
    search.add_argument("--api")
    search.set_defaults(func=cmd_search)
    model = sub.add_parser("model", help="switch a tenant's serving embedding model, or roll back")
    model.add_argument("action", choices=["switch", "rollback"])
    model.add_argument("tenant_id")
    model.add_argument("model", nargs="?", default="")
    model.set_defaults(func=cmd_model)
    mcp = sub.add_parser("mcp", help="serve the agent tools over MCP (stdio, or --http)")
    mcp.add_argument("--key", help="API key for stdio (default: GROUNDWORK_API_KEY)")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--port", type=int, default=8089)
    mcp.set_defaults(func=cmd_mcp)
    evaluation = sub.add_parser(
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
    evaluation.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
