"""Where the values a sharded step hands to the next live: the platform's
BlobStore (S3 on several hosts), as small JSON documents.

Dagster passes a step's outputs through an IO manager; its default writes
pickles under the run host's DAGSTER_HOME, which another host cannot read.
The shard plan (which slices of a tenant's versions) and each shard's report
are a few hundred bytes of JSON each, so they go where every worker already
reaches: the blob store named by the settings (GROUNDWORK_BLOB_BACKEND and
its URL), under `dagster-io/<run>/<step>/<output>[/<mapping>]`. A retried
step writes the same key again; JSON (not pickle) keeps what one host writes
from running code on another.
"""

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

import dagster as dg

from groundwork.ports import BlobStore
from resources.composition.blobs import build_blob_store
from resources.composition.platform import ensure_engines
from resources.composition.settings import GroundworkSettings

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-.]")
PREFIX = "dagster-io"


def _key(parts: Sequence[str]) -> str:
    return "/".join([PREFIX, *(_UNSAFE.sub("_", part) for part in parts)])


@functools.cache
def _blobs() -> BlobStore:
    """One store per process, from the settings read at the first step (a
    boto3 client costs ~0.8 s of CPU to make)."""
    settings = GroundworkSettings.from_env()
    endpoint = settings.s3_endpoint
    if settings.blob_backend == "s3" and not endpoint:
        endpoint = ensure_engines(settings).s3_endpoint  # the embedded server on one host
    return build_blob_store(settings, endpoint)


class ShardIOManager(dg.ConfigurableIOManager):  # type: ignore[misc]
    """JSON values in the platform's blob store, readable from any worker host."""

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        blobs = _blobs()
        key = _key(context.get_identifier())
        data = json.dumps(obj, sort_keys=True).encode()
        if blobs.exists(key):
            # a retried or redelivered step: blob objects are immutable, so
            # the newer value replaces the older one explicitly
            blobs.delete(key)
        blobs.put(key, data)

    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        assert upstream is not None
        return json.loads(_blobs().get(_key(upstream.get_identifier())))
