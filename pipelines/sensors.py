"""Sensors and schedules: what keeps the index fresh without anyone clicking.

- `inbox_sensor`: a tenant folder appearing or changing adds the tenant's
  partition and requests an ingest run (its cursor holds each folder's
  fingerprint, so an unchanged inbox requests nothing).
- `pending_work_sensor`: derives work from what is stored (versions not yet
  extracted, chunked, indexed, embedded or published, e.g. after an API
  upload) and requests the run that does it.
- `inbox_rescan_schedule`: hourly, a run for each tenant with something no
  sensor asked for (a failed run's folder, files waiting for the quota, a
  daily verification read due) or with a backlog; none for an unchanged one.
- `evaluate_after_publish`: evaluates a tenant x model once what it serves
  changed, after a quiet debounce interval (see pipelines/evaluation_debounce.py).
"""

import hashlib
import json
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import TypeVar

import dagster as dg

from assets.embeddings import shard_versions
from assets.partitions import tenant_model_key
from groundwork.catalog import TENANT_ID
from groundwork.connectors.inbox import (
    FINGERPRINT_LABEL,
    INBOX_FALLBACK_SECONDS,
    INBOX_KIND,
    inbox_tenants,
    watched,
)
from groundwork.connectors.rescan import rescans_wanted
from groundwork.services.inbox_sync import VERIFY_AFTER_SECONDS
from groundwork.services.ingest_routing import ingest_job
from pipelines import evaluation_debounce as debouncing
from pipelines.jobs import (
    deletion_sweep_job,
    eval_job,
    model_publish_job,
    reconciliation_job,
    tenant_ingest_distributed_job,
    tenant_ingest_job,
)
from resources.composition.platform import Platform
from resources.connectors.inbox_folder import inbox_fingerprint
from resources.dagster_glue.celery_steps import broker_configured
from resources.dagster_glue.platform_resource import EnginesNotRunning, GroundworkResource
from resources.postgres.connectors import PostgresConnectorCatalog
from resources.postgres.served_state import PostgresServedStates, ServedState

TENANT_STAGES = ("extract", "chunk", "summarize", "keyword_index")
ACTIVE_RUN_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


Context = TypeVar("Context", bound=dg.SensorEvaluationContext)
Tick = TypeVar("Tick")


def on_running_platform(
    body: Callable[[Context, Platform], Tick],
) -> Callable[[Context, GroundworkResource], Tick | dg.SkipReason]:
    """A sensor body that needs the platform's stores, given the platform: a
    tick that finds the engines stopped skips instead of starting them (a tick
    is seconds apart and must stay cheap). Not `functools.wraps`: Dagster reads
    the resource parameter (`groundwork`) from the signature, which `wraps`
    would replace with the body's."""

    def tick(context: Context, groundwork: GroundworkResource) -> Tick | dg.SkipReason:
        try:
            platform = groundwork.running_platform()
        except EnginesNotRunning as exc:
            return dg.SkipReason(str(exc))
        return body(context, platform)

    tick.__name__ = body.__name__
    tick.__doc__ = body.__doc__
    return tick


MODEL_STAGES = ("embed", "publish")
ALL_STAGES = (*TENANT_STAGES, *MODEL_STAGES)


#: up to this many candidates are asked about one by one (one indexed read each)
FEW_CANDIDATES = 8


def busy_partitions(
    instance: dg.DagsterInstance, job_name: str, candidates: Collection[str]
) -> set[str]:
    """The candidates with a run of this job queued or in progress: a second
    one would only repeat its work (Dagster's queue would hold it anyway: one
    run per partition at a time). A tick with no candidate reads no runs; a
    few are asked one by one; many are read in one pass over the active runs
    (asking per partition cost 1.7 s at a thousand tenants with work,
    measured by bench/sensor_ticks.py)."""
    if len(candidates) <= FEW_CANDIDATES:
        return {
            partition
            for partition in candidates
            if instance.get_run_ids(
                filters=dg.RunsFilter(
                    job_name=job_name,
                    statuses=ACTIVE_RUN_STATUSES,
                    tags={"dagster/partition": partition},
                ),
                limit=1,
            )
        }
    records = instance.get_run_records(
        filters=dg.RunsFilter(job_name=job_name, statuses=ACTIVE_RUN_STATUSES)
    )
    active = {r.dagster_run.tags.get("dagster/partition") for r in records}
    return {partition for partition in candidates if partition in active}


def _already_requested(instance: dg.DagsterInstance, tenant_id: str, fingerprint: str) -> bool:
    """A run was already requested for exactly this inbox state (the
    supervisor's inbox watcher labels its runs with it)."""
    return bool(
        instance.get_run_ids(
            filters=dg.RunsFilter(
                job_name=tenant_ingest_job.name,
                tags={"dagster/partition": tenant_id, FINGERPRINT_LABEL: fingerprint},
            ),
            limit=1,
        )
    )


#: the inbox sensor's interval without a watcher: every pass of the sensor
#: daemon (which loops every 5 s; with 5 s here a pass that came a moment early
#: skipped it, and a new file waited up to 10 s for its run)
INBOX_TICK_SECONDS = 1
#: a fallback walk is due this much before INBOX_FALLBACK_SECONDS is up: the
#: daemon's ticks drift by up to a pass, and a walk a pass late would wait a
#: whole interval more
_WALK_SLACK_SECONDS = 5.0


def inbox_sensor_every(seconds: int) -> dg.SensorDefinition:
    """The inbox sensor ticking every `seconds`: INBOX_TICK_SECONDS alone, or
    INBOX_FALLBACK_SECONDS where the supervisor's watcher requests the runs
    (each tick then was a daemon evaluation, a gRPC call and a tick row that
    found nothing to do, 12 a minute)."""

    @dg.sensor(
        name="inbox_sensor",
        job=tenant_ingest_job,
        minimum_interval_seconds=seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Turns new or changed inbox files into ingest runs for their tenant.",
    )
    @on_running_platform
    def inbox_sensor(
        context: dg.SensorEvaluationContext, platform: Platform
    ) -> dg.SensorResult | dg.SkipReason:
        """Walks every tenant's folder, so while the supervisor's watcher requests
        runs as files arrive the walk is a slow fallback (INBOX_FALLBACK_SECONDS)."""
        return _inbox_tick(context, platform)

    return inbox_sensor


inbox_sensor = inbox_sensor_every(INBOX_TICK_SECONDS)


def _inbox_tick(
    context: dg.SensorEvaluationContext, platform: Platform
) -> dg.SensorResult | dg.SkipReason:
    settings = platform.settings
    raw = json.loads(context.cursor) if context.cursor else {}
    # the cursor was the fingerprints alone before it kept the walk's time
    fresh = isinstance(raw.get("tenants"), dict)  # a tenant may be called "tenants"
    previous: dict[str, str] = raw["tenants"] if fresh else raw
    scanned_at = float(raw["scanned_at"]) if fresh else 0.0
    now = _now()
    due = INBOX_FALLBACK_SECONDS - _WALK_SLACK_SECONDS
    if now - scanned_at < due and watched(settings.home, settings.inbox_dir):
        return dg.SkipReason(
            "the inbox watcher requests runs as files arrive; the folders are walked "
            f"again in {due - (now - scanned_at):.0f} s"
        )
    known = set(context.instance.get_dynamic_partitions("tenant"))
    current: dict[str, str] = {}
    new_partitions: list[str] = []
    requests: list[dg.RunRequest] = []
    changed: dict[str, str] = {}
    for tenant_id in inbox_tenants(settings.inbox_dir):
        if not TENANT_ID.match(tenant_id):
            context.log.warning(f"inbox folder {tenant_id!r} is not a valid tenant id; skipped")
            continue
        fingerprint = inbox_fingerprint(settings.inbox_dir, tenant_id)
        if tenant_id not in known:
            new_partitions.append(tenant_id)
        if previous.get(tenant_id) == fingerprint:
            current[tenant_id] = fingerprint
        else:
            changed[tenant_id] = fingerprint
    busy = busy_partitions(context.instance, tenant_ingest_job.name, changed)
    for tenant_id, fingerprint in changed.items():
        if tenant_id in busy:
            # keep the old fingerprint: the change is picked up after the run ends
            if tenant_id in previous:
                current[tenant_id] = previous[tenant_id]
            continue
        current[tenant_id] = fingerprint
        if not _already_requested(context.instance, tenant_id, fingerprint):
            requests.append(
                dg.RunRequest(run_key=f"inbox:{tenant_id}:{fingerprint}", partition_key=tenant_id)
            )
    return dg.SensorResult(
        run_requests=requests,
        cursor=json.dumps({"scanned_at": now, "tenants": current}, sort_keys=True),
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest("tenant", new_partitions)]
        if new_partitions
        else [],
    )


#: pending_work_sensor's interval where nothing else requests the runs
PENDING_WORK_TICK_SECONDS = 15
#: ... and where the API, the MCP tools and the connectors request each
#: tenant's run as they store its work (an orchestrator URL is configured)
PENDING_WORK_FALLBACK_SECONDS = 60


def pending_work_sensor_every(seconds: int) -> dg.SensorDefinition:
    """pending_work_sensor ticking every `seconds`: PENDING_WORK_TICK_SECONDS, or
    PENDING_WORK_FALLBACK_SECONDS in the supervised stack, where its ticks were
    four a minute that found nothing (the stored work's run already requested)."""
    return dg.sensor(
        name="pending_work_sensor",
        jobs=[tenant_ingest_job, tenant_ingest_distributed_job],
        minimum_interval_seconds=seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Requests an ingest run for stored work not yet done (uploads through the "
        "API, versions waiting for the serving model's embeddings or publication): on the "
        "worker hosts for a tenant above one shard where a broker is configured.",
    )(on_running_platform(_pending_work_tick))


def _pending_work_tick(context: dg.SensorEvaluationContext, platform: Platform) -> dg.SensorResult:
    known = set(context.instance.get_dynamic_partitions("tenant"))
    new_partitions = [
        t.tenant_id for t in platform.catalog.list_tenants() if t.tenant_id not in known
    ]
    requests: list[dg.RunRequest] = []
    # one read for every tenant with work (it used to be two per tenant, one of
    # them counting the tenant's chunks, on every tick), then the runs in
    # progress among those tenants
    waiting = [
        w for w in platform.catalog.pending_work_all() if any(w.stages[s] for s in ALL_STAGES)
    ]
    distributed = broker_configured()
    tenants = [w.tenant_id for w in waiting]
    busy = busy_partitions(context.instance, tenant_ingest_job.name, tenants)
    if distributed:
        busy |= busy_partitions(context.instance, tenant_ingest_distributed_job.name, tenants)
    for work in waiting:
        fingerprint = hashlib.sha256(
            json.dumps([work.stages, work.newest_at], sort_keys=True).encode()
        ).hexdigest()[:16]
        if work.tenant_id not in busy:
            requests.append(
                dg.RunRequest(
                    run_key=f"work:{work.tenant_id}:{fingerprint}",
                    job_name=ingest_job(work.stages, shard_versions(), distributed),
                    partition_key=work.tenant_id,
                )
            )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest("tenant", new_partitions)]
        if new_partitions
        else [],
    )


pending_work_sensor = pending_work_sensor_every(PENDING_WORK_TICK_SECONDS)


@dg.schedule(
    job=tenant_ingest_job,
    cron_schedule="17 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Hourly: a run for each tenant with something a sensor did not ask for (its "
    "folder differs from what its last registration walked, files wait for its quota, a "
    "file's daily verification read is due) or with a backlog (retried, and its freshness "
    "check evaluated). An unchanged tenant gets no run.",
)
def inbox_rescan_schedule(
    context: dg.ScheduleEvaluationContext, groundwork: GroundworkResource
) -> list[dg.RunRequest] | dg.SkipReason:
    try:
        platform = groundwork.running_platform()
    except EnginesNotRunning as exc:
        return dg.SkipReason(str(exc))
    return _rescan_tick(context, platform)


def _rescan_tick(
    context: dg.ScheduleEvaluationContext, platform: Platform
) -> list[dg.RunRequest] | dg.SkipReason:
    """One stat walk per inbox tenant and three reads, whatever the number of
    tenants: it used to be one run per inbox tenant (100 runs an hour for 100
    tenants that had not changed)."""
    inbox = platform.settings.inbox_dir
    with_inbox = set(inbox_tenants(inbox))
    partitions = context.instance.get_dynamic_partitions("tenant")
    known = set(partitions)  # asked once per work row below
    tenants = [t for t in partitions if t in with_inbox]
    fingerprints = {t: inbox_fingerprint(inbox, t) for t in tenants}
    catalog = platform.catalog
    waiting = {
        w.tenant_id
        for w in catalog.pending_work_all()
        if any(w.stages[s] for s in ALL_STAGES) and w.tenant_id in known
    }
    wanted = rescans_wanted(
        partitions,
        fingerprints,
        catalog.inbox_scans(tenants),
        PostgresConnectorCatalog(platform.pool).items_due(
            INBOX_KIND, tenants, VERIFY_AFTER_SECONDS
        ),
        waiting,
    )
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else ""
    if not wanted:
        return dg.SkipReason(
            f"{len(tenants)} inbox tenants unchanged since their last registration, no read "
            "due, no backlog"
        )
    return [dg.RunRequest(run_key=f"rescan:{t}:{stamp}", partition_key=t) for t in wanted]


@dg.sensor(
    job=deletion_sweep_job,
    # the sources are unsearchable already; their purge waits at most half a minute
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Purges sources marked for deletion (they are already unsearchable).",
)
@on_running_platform
def deletion_sensor(context: dg.SensorEvaluationContext, platform: Platform) -> dg.SensorResult:
    pending: dict[str, list[str]] = {}
    for tenant_id, source_id in platform.catalog.sources_marked_for_deletion():
        pending.setdefault(tenant_id, []).append(source_id)
    busy = busy_partitions(context.instance, deletion_sweep_job.name, pending)
    requests = [
        dg.RunRequest(
            run_key=f"delete:{tenant_id}:{hashlib.sha256(','.join(sorted(ids)).encode()).hexdigest()[:16]}",
            partition_key=tenant_id,
        )
        for tenant_id, ids in sorted(pending.items())
        if tenant_id not in busy
    ]
    return dg.SensorResult(run_requests=requests)


#: how often the evaluation sensor looks at the served states (one read of one
#: row per tenant with a suite); the debounce interval is what spaces evaluations
#: (at 30 s it was 2 of an idle stack's 13.6 sensor ticks a minute)
EVALUATION_TICK_SECONDS = 60


def _now() -> float:
    """The sensor's clock (tests move it instead of sleeping out the debounce)."""
    return time.time()


@dg.sensor(
    job=eval_job,
    minimum_interval_seconds=EVALUATION_TICK_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Evaluates a tenant x model when what it serves changed (a publication, a "
    "model switch, a new golden set or eval configuration), once per burst of changes: "
    "quality is measured by the pipeline, and gates the next switch.",
)
@on_running_platform
def evaluate_after_publish(
    context: dg.SensorEvaluationContext, platform: Platform
) -> dg.SensorResult:
    """The served state of every tenant with a suite is one row (its search
    generation, serving model and suite version), so a tick that finds nothing
    changed requests nothing: an hourly rescan that published nothing no longer
    evaluates every tenant. Candidate models are evaluated after a model_publish
    run (read from run storage since the previous tick) once their tenant's
    served state differs from their last evaluation's."""
    now = _now()
    debounce = debouncing.Debounce.loads(context.cursor)
    served_states = PostgresServedStates(platform.pool)
    states = {s.tenant_id: s for s in served_states.with_suites()}
    runs_after = debounce.runs_after if debounce.runs_after is not None else now
    published = [
        r
        for r in context.instance.get_run_records(
            filters=dg.RunsFilter(
                job_name=model_publish_job.name,
                statuses=[dg.DagsterRunStatus.SUCCESS],
                updated_after=datetime.fromtimestamp(runs_after, UTC),
            )
        )
        if r.update_timestamp.timestamp() > runs_after
    ]
    debounce.runs_after = max([runs_after, *(r.update_timestamp.timestamp() for r in published)])
    current: dict[debouncing.Key, debouncing.Served] = {}
    examine: set[debouncing.Key] = set(debouncing.waiting(debounce))
    for key in debounce.keys:
        if key[0] in states:
            current[key] = _served(states[key[0]], key[1])
    for state in states.values():
        key = (state.tenant_id, state.serving_model)
        current[key] = _served(state, state.serving_model)
        examine.add(key)
    for record in published:
        tags = record.dagster_run.tags
        tenant_id = tags.get("dagster/partition/tenant", "")
        model_key = tags.get("dagster/partition/embedding_model", "")
        if tenant_id in states and model_key:
            current[(tenant_id, model_key)] = _served(states[tenant_id], model_key)
            examine.add((tenant_id, model_key))
    new = [key for key in examine if key in current and key not in debounce.keys]
    if new:
        evaluated_before = served_states.ever_evaluated([tenant for tenant, _ in new])
        for key in new:
            debouncing.adopt(debounce, key, current[key], key in evaluated_before)
    due = debouncing.due_evaluations(debounce, current, examine, now)
    evaluated = served_states.evaluated_as_served(due)  # by a run someone else started
    for key in evaluated:
        debouncing.requested(debounce, key, current[key])
    due = [key for key in due if key not in evaluated]
    partitions = {key: str(tenant_model_key(*key)) for key in due}
    busy = busy_partitions(context.instance, eval_job.name, partitions.values())
    requests = []
    for key in due:
        if partitions[key] in busy:
            continue  # stays waiting: evaluated again once the running one is done
        served = current[key]
        debouncing.requested(debounce, key, served)
        requests.append(
            dg.RunRequest(
                run_key=f"evaluate:{key[0]}:{key[1]}:{served.generation}:"
                f"{served.suite_updated_at}:{int(served.serving)}",
                partition_key=tenant_model_key(*key),
            )
        )
    return dg.SensorResult(run_requests=requests, cursor=debounce.dumps())


def _served(state: ServedState, model_key: str) -> debouncing.Served:
    return debouncing.Served(
        state.search_generation, state.suite_updated_at, model_key == state.serving_model
    )


reconciliation_schedule = dg.ScheduleDefinition(
    name="nightly_reconciliation",
    job=reconciliation_job,
    cron_schedule="41 2 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Nightly: rows without bytes and bytes without rows.",
)


@dg.sensor(
    # the inbox sensor and the connector passes add a new tenant's partition as
    # they request its run: this one catches the rest (and erasures) within a minute
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Keeps the tenant partitions equal to the tenants that exist (the catalog's "
    "tenants and the inbox folders): adds the missing, deletes the erased.",
)
@on_running_platform
def tenant_partitions_sensor(
    context: dg.SensorEvaluationContext, platform: Platform
) -> dg.SensorResult:
    wanted = {t.tenant_id for t in platform.catalog.list_tenants()} | {
        t for t in inbox_tenants(platform.settings.inbox_dir) if TENANT_ID.match(t)
    }
    known = set(context.instance.get_dynamic_partitions("tenant"))
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if wanted - known:
        requests.append(dg.AddDynamicPartitionsRequest("tenant", sorted(wanted - known)))
    if known - wanted:
        requests.append(dg.DeleteDynamicPartitionsRequest("tenant", sorted(known - wanted)))
    return dg.SensorResult(dynamic_partitions_requests=requests)


def definitions(inbox_watcher: bool = False, requested_on_store: bool = False) -> dg.Definitions:
    """The sensors and schedules; `inbox_watcher`: the supervisor's watcher
    requests inbox runs, so the inbox sensor is the slow fallback walk;
    `requested_on_store`: the API, tools and connectors request a tenant's run
    as they store its work, so pending_work_sensor is a slow fallback too."""
    return dg.Definitions(
        sensors=[
            inbox_sensor_every(int(INBOX_FALLBACK_SECONDS)) if inbox_watcher else inbox_sensor,
            pending_work_sensor_every(PENDING_WORK_FALLBACK_SECONDS)
            if requested_on_store
            else pending_work_sensor,
            deletion_sensor,
            evaluate_after_publish,
            tenant_partitions_sensor,
        ],
        schedules=[inbox_rescan_schedule, reconciliation_schedule],
    )


defs = definitions()
