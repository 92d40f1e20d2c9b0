"""Retry policy shared by the stage assets. Document problems never raise (they
are failure values recorded on the version); only infrastructure failures fail
a run, and those are worth retrying with backoff."""

from __future__ import annotations

import dagster as dg

INFRA_RETRY = dg.RetryPolicy(max_retries=3, delay=2, backoff=dg.Backoff.EXPONENTIAL)
