"""The S3 bucket connector's rules, without the client: which keys an
instance takes, what an object's version and permissions are, and which
failures are worth retrying. The boto3 side is resources/connectors/s3_bucket.py.

An object's version is its ETag, which S3 changes whenever the bytes change
(and only then), so an unchanged object is compared from the listing alone,
never read. Permissions come from a prefix -> subjects map (free: the listing
has the key) or from an object tag (one tagging request per listed object,
which a bucket of 100,000 objects pays on every pass: use it where the tags
are the source of truth).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwork.connectors.port import ConnectorError, SourceItem
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix, subjects_from_tags

KIND = "s3"
#: S3's own largest page
PAGE_SIZE = 1000
#: error codes a later try may get past (throttling, a server restarting)
RETRYABLE_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestTimeout",
        "InternalError",
        "ServiceUnavailable",
        "503",
        "500",
        "429",
        "RequestLimitExceeded",
    }
)


@dataclass(frozen=True)
class S3BucketSettings:
    bucket: str
    prefix: str = ""
    endpoint: str | None = None
    region: str = "us-east-1"
    selection: ItemSelection = field(default_factory=ItemSelection)
    subjects_by_prefix: SubjectsByPrefix = field(default_factory=SubjectsByPrefix)
    subjects_tag: str | None = None  # an object tag holding subjects, e.g. "groundwork-subjects"
    page_size: int = PAGE_SIZE

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> S3BucketSettings:
        """From an instance's stored configuration (which holds no secret)."""
        if not config.get("bucket"):
            raise ValueError("an s3 connector needs a bucket")
        return cls(
            bucket=str(config["bucket"]),
            prefix=str(config.get("prefix") or ""),
            endpoint=config.get("endpoint") or None,
            region=str(config.get("region") or "us-east-1"),
            selection=ItemSelection(
                tuple(config.get("include") or ()), tuple(config.get("exclude") or ())
            ),
            subjects_by_prefix=SubjectsByPrefix.from_config(config.get("subjects_by_prefix")),
            subjects_tag=config.get("subjects_tag") or None,
            page_size=int(config.get("page_size") or PAGE_SIZE),
        )

    def relative(self, key: str) -> str:
        return key[len(self.prefix) :].lstrip("/")


def object_item(
    settings: S3BucketSettings, entry: Mapping[str, Any], tags: Mapping[str, str] | None
) -> SourceItem:
    """A listed object as a SourceItem; the item id is the whole key (stable
    whatever the instance's prefix), the citation names bucket and key."""
    key = str(entry["Key"])
    relative = settings.relative(key)
    subjects = None
    if settings.subjects_tag is not None and tags is not None:
        subjects = subjects_from_tags(tags, settings.subjects_tag)
    if subjects is None:
        subjects = settings.subjects_by_prefix.subjects_for(relative)
    return SourceItem(
        item_id=key,
        version=str(entry["ETag"]).strip('"'),
        size=int(entry["Size"]) if entry.get("Size") is not None else None,
        media_type=None,
        subjects=subjects,
        location={"bucket": settings.bucket, "key": key, "filename": relative or key},
    )


def s3_error(
    item_id: str | None, code: str, status: int | None, message: str, retry_after: str | None
) -> ConnectorError:
    """A client failure as the port's error: throttling and server errors are
    retryable (with the server's Retry-After when it sent one); 403 and 404 are
    the source's answer and are not."""
    after: float | None = None
    if retry_after:
        try:
            after = max(0.0, float(retry_after))
        except ValueError:
            after = None
    retryable = code in RETRYABLE_CODES or (status is not None and status >= 500)
    return ConnectorError(KIND, item_id, f"{code}: {message}", after, retryable)


def selected(settings: S3BucketSettings, keys: Sequence[str]) -> list[str]:
    return [
        k for k in keys if not k.endswith("/") and settings.selection.selects(settings.relative(k))
    ]
