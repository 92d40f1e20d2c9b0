"""Dagster as the connectors' control plane: a pass is a run.

- A sensor per connector kind selects the due, unpaused instances of its kind
  (one catalog query; a tick with nothing due does no other work) and
  requests a `connector_pass` run per instance: the instance's partition of
  `connector_sources` (assets/connectors.py). The run does the pass, records
  the state as the partition's metadata and the freshness check, and fails
  when the pass stopped on an error — that instance's run alone. A pass is
  not bounded by the sensor's evaluation timeout any more, and a backfill of
  one connector from the UI is the same run.
- The run key is the instance and the interval it is due in, so a request
  the daemon already launched is not launched twice in one interval (a pass
  that stopped open is retried once an interval, not every tick); an instance
  with a run still queued or running is not requested again, so two passes
  of one instance never overlap.
- A paused instance is passed by no run, so its last check (perhaps green)
  would stay: the same query also returns the paused instances behind their
  freshness target, and the sensor reports each one's check not green (WARN,
  `paused: true`) once per stale spell (its cursor holds those reported).
- The tenant's ingest follows a pass run that registered new or changed
  bytes: `connector_ingest_sensor`, a run-status sensor on the pass job's
  successes, requests `tenant_ingest` for its tenant. Chosen over putting
  the ingest assets in the same job (they are partitioned by tenant, the
  pass by connector: one job cannot hold both) and over declarative
  automation (no partition mapping joins a connector to its tenant, and an
  unchanged pass must start nothing). The pass itself already asks for the
  ingest through the IngestTrigger port as soon as a page registers
  something (the ≤ 10 s goal); the sensor is the guarantee, and it asks
  nothing when a run of the tenant is still waiting to start (that run will
  see the pass's work). Deletions and permission changes at the source are
  applied by the pass itself and need no ingest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import dagster as dg

from assets.connectors import (
    ASSET_KEY,
    REGISTERED,
    WITHIN_FRESHNESS,
    connector_sources,
    freshness_check,
)
from groundwork.connectors.catalog import ConnectorInstance
from groundwork.services.connectors import KINDS, connector
from pipelines.jobs import tenant_ingest_job
from pipelines.sensors import on_running_platform
from resources.composition.platform import Platform
from resources.connectors.ports import ConnectorPlatform

CONNECTOR_PASS_JOB = "connector_pass"
#: run tags of a pass run: which tenant and instance it mirrors
TENANT_TAG = "groundwork/tenant"
CONNECTOR_TAG = "groundwork/connector"
PARTITION_TAG = "dagster/partition"
#: runs that have not finished: a pass of their partition is under way or will be
UNFINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]

connector_pass_job = dg.define_asset_job(
    CONNECTOR_PASS_JOB,
    selection=[connector_sources],
    description="One sync pass of one connector instance (partition: its instance id): its "
    "state as metadata and the freshness check; fails when the pass stopped on an error.",
)


def pass_run_key(instance: ConnectorInstance, now: float) -> str:
    """One key per instance and interval: a due instance is due again only
    an interval after its last pass began, so each pass gets a new key."""
    return f"connector:{instance.instance_id}:{int(now // max(instance.interval_seconds, 1))}"


def _unfinished(context: dg.SensorEvaluationContext, instance_ids: Sequence[str]) -> set[str]:
    """The instances among `instance_ids` with a pass run queued or running (one query)."""
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=CONNECTOR_PASS_JOB, statuses=UNFINISHED)
    )
    busy = {run.tags.get(PARTITION_TAG) for run in runs}
    return {i for i in instance_ids if i in busy}


#: how often each connector kind's sensor looks for due connectors
CONNECTOR_TICK_SECONDS = 60


def connector_sensor(kind: str) -> dg.SensorDefinition:
    @dg.sensor(
        name=f"{kind}_connector_sensor",
        job=connector_pass_job,
        # once a minute: a connector's own pass interval is 300 s by default, and
        # four kinds ticking every 30 s were 8 of the idle daemon's ~20 ticks a minute
        minimum_interval_seconds=CONNECTOR_TICK_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Requests a connector_pass run for each due, unpaused {kind} connector "
        "(its partition); the run does the pass.",
    )
    @on_running_platform
    def tick(
        context: dg.SensorEvaluationContext, platform: Platform
    ) -> dg.SensorResult | dg.SkipReason:
        ticking = (
            ConnectorPlatform(platform).connector_catalog().due_instances(kind, paused_behind=True)
        )
        due = [i for i in ticking if not i.paused]
        # paused and behind: reported not green once per stale spell (the cursor
        # holds those reported; one that is fresh or unpaused again drops out)
        stale = {i.instance_id: i for i in ticking if i.paused}
        reported = set(json.loads(context.cursor)) if context.cursor else set()
        newly_stale = [i for key, i in stale.items() if key not in reported]
        if not due and not newly_stale and reported == set(stale):
            return dg.SkipReason(f"no {kind} connector is due")
        busy = _unfinished(context, [i.instance_id for i in due]) if due else set()
        now = time.time()
        wanted = [i for i in due if i.instance_id not in busy]
        known_connectors = set(context.instance.get_dynamic_partitions("connector"))
        known_tenants = set(context.instance.get_dynamic_partitions("tenant"))
        partitions = [
            dg.AddDynamicPartitionsRequest(
                "connector",
                sorted({i.instance_id for i in [*wanted, *newly_stale]} - known_connectors),
            ),
            # the ingest run that follows a pass is a run of the tenant's partition
            dg.AddDynamicPartitionsRequest(
                "tenant", sorted({i.tenant_id for i in wanted} - known_tenants)
            ),
        ]
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=pass_run_key(i, now),
                    partition_key=i.instance_id,
                    tags={TENANT_TAG: i.tenant_id, CONNECTOR_TAG: i.name},
                )
                for i in wanted
            ],
            dynamic_partitions_requests=[p for p in partitions if p.partition_keys],
            asset_events=[_not_green(platform, i) for i in newly_stale],
            cursor=json.dumps(sorted(stale)),
        )

    return tick


def _not_green(platform: Platform, instance: ConnectorInstance) -> dg.AssetCheckEvaluation:
    """The freshness check of a paused instance behind its target (failed,
    WARN, paused: true), which no run evaluates since no run passes it."""
    view = connector(
        ConnectorPlatform(platform.for_tenant(instance.tenant_id)),
        instance.tenant_id,
        instance.instance_id,
    )
    check = freshness_check(view)
    return dg.AssetCheckEvaluation(
        asset_key=ASSET_KEY,
        check_name=check.check_name or WITHIN_FRESHNESS,
        passed=check.passed,
        metadata=check.metadata,
        severity=check.severity,
        partition=instance.instance_id,
    )


def _pass_outcome(instance: dg.DagsterInstance, run_id: str) -> tuple[str, int]:
    """The tenant and the items registered, as the pass run's materialization
    recorded them (one event-log read): ("", 0) when it recorded none."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records
    tenant, registered = "", 0
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        if materialization is None:
            continue
        metadata = materialization.metadata
        tenant = str(metadata["tenant"].value) if "tenant" in metadata else tenant
        registered += int(metadata[REGISTERED].value or 0) if REGISTERED in metadata else 0  # type: ignore[arg-type]
    return tenant, registered


@dg.run_status_sensor(
    name="connector_ingest_sensor",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[connector_pass_job],
    request_job=tenant_ingest_job,
    # as the connector sensors: idle, a tick costs one event-log read (issue #33);
    # the fast path to ingest is the pass's own IngestTrigger request, so this
    # fallback ticks once a minute, as they do
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests the tenant's ingest run after a connector pass run that registered "
    "new or changed items (none when a run of the tenant is still waiting to start).",
)
def connector_ingest_sensor(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    run = context.dagster_run
    # a run launched from the UI has no tenant tag: its metadata names the tenant
    tenant, registered = _pass_outcome(context.instance, run.run_id)
    if not tenant or not registered:
        return dg.SkipReason(f"run {run.run_id} registered nothing")
    waiting = context.instance.get_runs(
        filters=dg.RunsFilter(
            job_name=tenant_ingest_job.name, statuses=WAITING, tags={PARTITION_TAG: tenant}
        ),
        limit=1,
    )
    if waiting:
        return dg.SkipReason(f"{tenant}'s ingest run {waiting[0].run_id} has yet to start")
    if not context.instance.has_dynamic_partition("tenant", tenant):
        context.instance.add_dynamic_partitions("tenant", [tenant])
    return dg.RunRequest(
        run_key=f"after-pass:{run.run_id}",
        job_name=tenant_ingest_job.name,
        partition_key=tenant,
        tags={CONNECTOR_TAG: run.tags.get(CONNECTOR_TAG, "")},
    )


connector_sensors = [connector_sensor(kind) for kind in KINDS]

defs = dg.Definitions(
    jobs=[connector_pass_job], sensors=[*connector_sensors, connector_ingest_sensor]
)
