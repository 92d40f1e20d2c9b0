"""Run the Dagster jobs in-process against the persistent instance, so the runs
and partitions show in the UI exactly as if the daemon had launched them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from assets.partitions import tenant_model_key
from groundwork.connectors.inbox import FINGERPRINT_LABEL
from pipelines.definitions import build_definitions
from resources.connectors.inbox_folder import inbox_fingerprint

#: the jobs run here in-process (pipelines.definitions.defs is Dagster's to load)
defs = build_definitions()
#: The progress bar is the CLI's report; Dagster's step log stays in the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def ingest_tenants(
    instance: dg.DagsterInstance,
    tenants: Sequence[str],
    model_key: str,
    inbox_dir: Path | None = None,
    definitions: dg.Definitions = defs,
) -> dict[str, dict[str, object]]:
    """Materialize every stage for each tenant; return per-tenant stage metadata.

    With `inbox_dir`, each run is labelled with the tenant's inbox fingerprint
    as it starts, the label the inbox sensor adopts: the demo's own ingest is
    not requested again by the sensor once the daemon starts (it was, and the
    demo's --exit then killed those runs under the launcher)."""
    missing = [t for t in tenants if not instance.has_dynamic_partition("tenant", t)]
    if missing:
        instance.add_dynamic_partitions("tenant", missing)
    ingest_job = definitions.resolve_job_def("tenant_ingest")
    publish_job = definitions.resolve_job_def("model_publish")
    summary: dict[str, dict[str, object]] = {}
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        TimeElapsedColumn(),
    )
    with Progress(*columns) as progress:
        task = progress.add_task("Ingesting through Dagster", total=len(tenants))
        for tenant_id in tenants:
            progress.update(
                task, description=f"{tenant_id}: register, extract, chunk, index, publish"
            )
            labels = (
                {FINGERPRINT_LABEL: inbox_fingerprint(inbox_dir, tenant_id)} if inbox_dir else {}
            )
            results = [
                ingest_job.execute_in_process(
                    partition_key=tenant_id, instance=instance, run_config=QUIET, tags=labels
                )
            ]
            stages = _stages(results)
            serving: dict[str, object] = stages.get("serving_index", {})  # type: ignore[assignment]
            if serving.get("model") != model_key:
                # the ingest run publishes the serving model; another model is its own run
                progress.update(task, description=f"{tenant_id}: embed ({model_key}), publish")
                results.append(
                    publish_job.execute_in_process(
                        partition_key=tenant_model_key(tenant_id, model_key),
                        instance=instance,
                        run_config=QUIET,
                    )
                )
                stages = _stages(results)
            progress.advance(task)
            summary[tenant_id] = stages
    return summary


def _stages(results: Sequence[dg.ExecuteInProcessResult]) -> dict[str, object]:
    """Each materialized asset's metadata (the last run's wins) and each check's result."""
    stages: dict[str, object] = {}
    for result in results:
        for event in result.get_asset_materialization_events():
            materialization = event.step_materialization_data.materialization
            stages[materialization.asset_key.to_user_string()] = {
                k: v.value for k, v in materialization.metadata.items()
            }
        for evaluation in result.get_asset_check_evaluations():
            stages[f"check:{evaluation.check_name}"] = evaluation.passed
    return stages


def evaluate_partition(
    instance: dg.DagsterInstance, tenant_id: str, model_key: str
) -> dict[str, object]:
    """Materialize retrieval_quality for one tenant x model; its metadata and gate.
    A failed gate (a blocking check) fails the run but the scores are stored:
    it is reported here, not raised."""
    job = defs.resolve_job_def("evaluate_retrieval")
    result = job.execute_in_process(
        partition_key=tenant_model_key(tenant_id, model_key),
        instance=instance,
        run_config=QUIET,
        raise_on_error=False,
    )
    found: dict[str, object] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        found.update({k: v.value for k, v in materialization.metadata.items()})
    for evaluation in result.get_asset_check_evaluations():
        found[f"check:{evaluation.check_name}"] = evaluation.passed
        reasons = evaluation.metadata.get("reasons") or evaluation.metadata.get("status")
        found[f"check:{evaluation.check_name}:reasons"] = getattr(reasons, "value", reasons) or ""
    if not found:
        raise RuntimeError(f"the eval run failed: {result.get_step_failure_events()}")
    return found
