"""Dagster's compute logs (each step's stdout and stderr) in the platform's
object store, so a step that ran on a worker host can be read in the UI of
another host.

Dagster's default keeps them in files under `DAGSTER_HOME` on the host that
ran the step: a worker host wrote them to its own disk, where the run host's
webserver never looks (invariant 15: no worker host needs a shared disk).
dagster-aws's `S3ComputeLogManager` uploads them when a step's capture ends
(and every `upload_interval` seconds while it runs), but it takes its
credentials from boto3's default chain (AWS_* variables, profiles), which the
platform does not set: its S3 identity is `GROUNDWORK_S3_ACCESS_KEY_ID` /
`GROUNDWORK_S3_SECRET_ACCESS_KEY`. This subclass names those (as Dagster
`{env: ...}` config, resolved by each process from its own environment: the
instance reference a worker receives through the broker carries the names,
never the values) and path-style addressing, which SeaweedFS and most
self-hosted stores need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from dagster import Field, StringSource
from dagster._serdes import ConfigurableClassData
from dagster_aws.s3.compute_log_manager import S3ComputeLogManager

from resources.blobs.s3 import S3Credentials, s3_client
from resources.composition.settings import GroundworkSettings

ACCESS_KEY_ENV = "GROUNDWORK_S3_ACCESS_KEY_ID"
SECRET_KEY_ENV = "GROUNDWORK_S3_SECRET_ACCESS_KEY"
#: seconds between uploads of a running step's partial log (the UI shows a
#: step on another host as it runs, not only when it ends)
UPLOAD_INTERVAL_SECONDS = 30


class ObjectStoreComputeLogs(S3ComputeLogManager):
    """`S3ComputeLogManager` with the platform's S3 identity and addressing."""

    def __init__(
        self,
        bucket: str,
        endpoint_url: str,
        access_key_id: str,
        secret_access_key: str,
        region: str = "us-east-1",
        path_style: bool = True,
        inst_data: ConfigurableClassData | None = None,
        **rest: Any,
    ) -> None:
        super().__init__(
            bucket, inst_data=inst_data, endpoint_url=endpoint_url, region=region, **rest
        )
        # the parent made its client from boto3's default chain; this one is
        # the blob store's kind of client, signing with the platform's identity
        # (and made from the process's one session, like the blob store's)
        self._s3_session = s3_client(
            endpoint_url,
            region,
            S3Credentials(access_key_id, secret_access_key),
            path_style=path_style,
        )

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            **super().config_type(),
            "endpoint_url": StringSource,
            "access_key_id": StringSource,
            "secret_access_key": StringSource,
            "region": Field(StringSource, is_required=False, default_value="us-east-1"),
            "path_style": Field(bool, is_required=False, default_value=True),
        }

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> Self:
        return cls(inst_data=inst_data, **config_value)


def object_store_compute_logs(
    bucket: str, prefix: str, endpoint_url: str, region: str, path_style: bool
) -> dict[str, Any]:
    """The `compute_logs` block of dagster.yaml: logs under `<prefix>/dagster-logs`
    in the platform's bucket, the secrets by environment variable name."""
    return {
        "module": "resources.dagster_glue.object_compute_logs",
        "class": "ObjectStoreComputeLogs",
        "config": {
            "bucket": bucket,
            "prefix": "/".join(p for p in (prefix.strip("/"), "dagster-logs") if p),
            "endpoint_url": endpoint_url,
            "region": region,
            "path_style": path_style,
            "access_key_id": {"env": ACCESS_KEY_ENV},
            "secret_access_key": {"env": SECRET_KEY_ENV},
            "upload_interval": UPLOAD_INTERVAL_SECONDS,
            "skip_empty_files": True,
        },
    }


def compute_logs_for(settings: GroundworkSettings) -> dict[str, Any] | None:
    """Object-store compute logs where the platform's bytes are in an S3 store
    named by endpoint with an identity in the environment (the several-hosts
    set-up: a worker host reads only from there); None, Dagster's local files,
    on one machine (the embedded store's identity lives in a file under the
    home, which another host could not name)."""
    if settings.blob_backend != "s3" or not settings.s3_endpoint:
        return None
    if not settings.s3_access_key_id or not settings.s3_secret_access_key:
        return None
    return object_store_compute_logs(
        settings.s3_bucket,
        settings.s3_prefix,
        settings.s3_endpoint,
        settings.s3_region,
        settings.s3_path_style,
    )
