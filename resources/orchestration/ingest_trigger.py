"""IngestTrigger adapters: Dagster's GraphQL client, and none.

The Dagster adapter submits the tenant's `tenant_ingest` run through the
webserver's GraphQL API with Dagster's own client (`dagster-graphql`), so the
run goes through the run queue like a sensor's (the queue's per-partition tag
limit keeps two runs of one tenant from running at once) and shows in the UI.
A tenant's run that is still queued will see any work stored before it
starts, so a burst of uploads adds at most one queued run per tenant.
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


class DagsterIngestTrigger:
    def __init__(self, url: str, timeout: int = 5) -> None:
        parsed = urlsplit(url)
        self._host, self._port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self._timeout = timeout
        self._lock = threading.Lock()
        self._queued: dict[str, str] = {}  # tenant -> the last run requested for it

    def _client(self):  # type: ignore[no-untyped-def]
        from dagster_graphql import DagsterGraphQLClient

        return DagsterGraphQLClient(self._host, port_number=self._port, timeout=self._timeout)

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
