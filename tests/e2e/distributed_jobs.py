"""What a worker process reconstructs a distributed test run's steps from:
the code location's own tenant_ingest_distributed job, bound to the test
database and the session's index prefix (passed with the job's origin, so a
worker needs no environment of the test's)."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import build_definitions
from tests.e2e.helpers import resource


def distributed_ingest(index_prefix: str) -> dg.JobDefinition:
    return build_definitions(resource(index_prefix)).resolve_job_def("tenant_ingest_distributed")
