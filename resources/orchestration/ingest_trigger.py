"""IngestTrigger adapters: Dagster's GraphQL client, and none.

The Dagster adapter submits the tenant's `tenant_ingest` run through the
webserver's GraphQL API with Dagster's own client (`dagster-graphql`), so the
run goes through the run queue like a sensor's (the queue's per-partition tag
limit keeps two runs of one tenant from running at once) and shows in the UI.
A tenant's run that is still queued will see any work stored before it
starts, so a burst of uploads adds at most one queued run per tenant.

A tenant's first run needs its `tenant` partition: a tenant seen first here
(a new inbox folder, a tenant made through the API) has none until a
sensor's next pass adds it, and a run submitted before that failed at its
first output (99 new folders under `groundwork up`: runs failed with
"Nonexistent partition keys"). So the partition is added first, through the
same API (`addDynamicPartition`), once per tenant and process.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from groundwork.ports import (
    REGISTRATION_TRIGGER,
    TRIGGER_LABEL,
    IngestAlreadyQueued,
    IngestNotRequested,
    IngestRequested,
    IngestTriggerOutcome,
)

INGEST_JOB = "tenant_ingest"
NOT_STARTED = {"QUEUED", "NOT_STARTED"}
#: the dynamic partitions definition of tenants (assets/partitions.py)
TENANT_PARTITIONS = "tenant"
ADD_PARTITION = """
mutation AddTenantPartition($selector: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $selector, partitionsDefName: $name, partitionKey: $key) {
    __typename
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}
"""
#: what the mutation answers when the partition is there afterwards
PARTITION_THERE = {"AddDynamicPartitionSuccess", "DuplicateDynamicPartitionError"}


class DagsterIngestTrigger:
    def __init__(self, url: str, timeout: int = 5) -> None:
        parsed = urlsplit(url)
        self._host, self._port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self._timeout = timeout
        self._lock = threading.Lock()
        self._queued: dict[str, str] = {}  # tenant -> the last run requested for it
        self._partitioned: set[str] = set()  # tenants whose partition is known to exist

    def _client(self):  # type: ignore[no-untyped-def]
        from dagster_graphql import DagsterGraphQLClient

        return DagsterGraphQLClient(self._host, port_number=self._port, timeout=self._timeout)

    def _ensure_partition(self, client: Any, tenant_id: str) -> None:
        """Adds the tenant's partition unless this process saw it added. The
        client's own helpers find the code location (as its
        submit_job_execution does) and send the query; they are private to
        dagster-graphql, whose version the lock file pins."""
        with self._lock:
            if tenant_id in self._partitioned:
                return
        [job] = client._get_repo_locations_and_names_with_pipeline(INGEST_JOB)
        selector = {
            "repositoryLocationName": job.repository_location_name,
            "repositoryName": job.repository_name,
        }
        answer = client._execute(
            ADD_PARTITION, {"selector": selector, "name": TENANT_PARTITIONS, "key": tenant_id}
        )["addDynamicPartition"]
        if answer["__typename"] not in PARTITION_THERE:
            raise RuntimeError(f"{answer['__typename']}: {answer.get('message', '')}")
        with self._lock:
            self._partitioned.add(tenant_id)

    @staticmethod
    def _not_started(client: Any, run_id: str) -> bool:
        """Whether a remembered run is still waiting to start; a run that can
        no longer be read (deleted from the UI) is not, so a new one is asked."""
        try:
            return str(client.get_run_status(run_id).value) in NOT_STARTED
        except Exception:
            return False

    def request_ingest(
        self, tenant_id: str, labels: Mapping[str, str] | None = None
    ) -> IngestTriggerOutcome:
        try:
            client = self._client()
        except Exception as exc:  # best effort: the registration already succeeded
            return IngestNotRequested(f"no Dagster client: {exc}")
        with self._lock:
            previous = self._queued.get(tenant_id)
        if previous is not None and self._not_started(client, previous):
            return IngestAlreadyQueued(previous)
        try:
            self._ensure_partition(client, tenant_id)
            run_id = client.submit_job_execution(
                INGEST_JOB,
                tags={
                    TRIGGER_LABEL: REGISTRATION_TRIGGER,
                    **(labels or {}),
                    "dagster/partition": tenant_id,
                },
            )
        except Exception as exc:  # best effort: the registration already succeeded
            return IngestNotRequested(f"Dagster did not accept the run: {exc}")
        with self._lock:
            self._queued[tenant_id] = run_id
        return IngestRequested(run_id)


class NoIngestTrigger:
    """Outside the supervised stack (tests, one-off CLI work) nothing is
    requested; the sensors, or the caller's own run, process the work."""

    def request_ingest(
        self, tenant_id: str, labels: Mapping[str, str] | None = None
    ) -> IngestTriggerOutcome:
        return IngestNotRequested("no orchestrator is configured (GROUNDWORK_DAGSTER_URL)")
