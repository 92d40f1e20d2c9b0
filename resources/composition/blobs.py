"""Which BlobStore the platform gets, from settings.

`filesystem`: GROUNDWORK_HOME/blobs, for one host. `s3`: a bucket every host
reaches by URL (GROUNDWORK_S3_ENDPOINT), or, without an endpoint, the
SeaweedFS server the project starts under GROUNDWORK_HOME (its keys are
generated there once). The bucket is created when absent, with a lifecycle
rule that aborts multipart uploads left incomplete for a day (a process
killed mid-upload leaves parts no listing of objects shows).
"""

from __future__ import annotations

import contextlib
from typing import Any

from groundwork.errors import GroundworkError
from groundwork.ports import BlobStore
from groundwork.upload_staging import UploadStaging
from resources.blobs.filesystem import FilesystemBlobStore
from resources.blobs.migrating import MigratingBlobStore
from resources.blobs.s3 import S3BlobStore, S3Credentials, s3_client, translated
from resources.blobs.s3_staging import S3UploadStaging
from resources.blobs.upload_staging import FilesystemUploadStaging
from resources.composition.settings import GroundworkSettings
from resources.engines.seaweedfs import EmbeddedSeaweedFS

#: days after which an incomplete multipart upload is aborted by the bucket
ABORT_INCOMPLETE_AFTER_DAYS = 1


def embedded_seaweedfs(settings: GroundworkSettings) -> EmbeddedSeaweedFS:
    return EmbeddedSeaweedFS(settings.seaweedfs_home, settings.s3_port, region=settings.s3_region)


def s3_credentials(settings: GroundworkSettings) -> S3Credentials | None:
    """The configured key pair; the embedded server's own when no endpoint is
    set; None (boto3's chain: instance role, AWS_* variables) otherwise."""
    if settings.s3_access_key_id and settings.s3_secret_access_key:
        return S3Credentials(settings.s3_access_key_id, settings.s3_secret_access_key)
    if settings.s3_endpoint is None:
        return embedded_seaweedfs(settings).credentials
    return None


def build_blob_store(settings: GroundworkSettings, s3_endpoint: str | None = None) -> BlobStore:
    """`s3_endpoint`: where ensure_engines found or started the server."""
    if settings.blob_backend == "filesystem":
        return FilesystemBlobStore(settings.blob_dir)
    endpoint = s3_endpoint or settings.s3_endpoint or embedded_seaweedfs(settings).endpoint
    client = s3_client(
        endpoint, settings.s3_region, s3_credentials(settings), path_style=settings.s3_path_style
    )
    store = S3BlobStore(client, settings.s3_bucket, prefix=settings.s3_prefix)
    if store.ensure_bucket():
        _abort_incomplete_uploads_rule(client, settings)
    if settings.blob_read_fallback == "filesystem":
        # while `groundwork blobs migrate` finishes: reads fall back to the folder
        return MigratingBlobStore(store, FilesystemBlobStore(settings.blob_dir))
    return store


def build_upload_staging(settings: GroundworkSettings, blobs: BlobStore) -> UploadStaging:
    """Where open upload sessions' bytes wait: in the bucket itself when the
    bytes live in one (each part sent on as it arrives, no shared disk), else
    a folder under GROUNDWORK_HOME beside the folder store."""
    bucket = blobs.new if isinstance(blobs, MigratingBlobStore) else blobs
    if isinstance(bucket, S3BlobStore):
        return S3UploadStaging(bucket)
    return FilesystemUploadStaging(settings.home / "uploads", blobs)


def _abort_incomplete_uploads_rule(client: Any, settings: GroundworkSettings) -> None:
    with contextlib.suppress(GroundworkError), translated("the bucket's lifecycle rule"):
        # best effort: a store without lifecycle rules still works, and
        # deleting a key aborts its incomplete uploads anyway
        client.put_bucket_lifecycle_configuration(
            Bucket=settings.s3_bucket,
            LifecycleConfiguration={
                "Rules": [
                    {
                        "ID": "groundwork-abort-incomplete-uploads",
                        "Status": "Enabled",
                        "Filter": {"Prefix": settings.s3_prefix},
                        "AbortIncompleteMultipartUpload": {
                            "DaysAfterInitiation": ABORT_INCOMPLETE_AFTER_DAYS
                        },
                    }
                ]
            },
        )
