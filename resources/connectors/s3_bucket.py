"""The S3 bucket connector on boto3 (any S3-compatible store: AWS, SeaweedFS,
MinIO ...). The rules are groundwork/connectors/s3_bucket.py; this module
only lists, reads and translates botocore's errors into ConnectorError.

Listing is ListObjectsV2 pages (1,000 keys each), resumed with StartAfter the
cursor (the last key of a finished page), so a crashed pass goes on where it
stopped. S3 returns keys in UTF-8 binary order, so each page names the key
range it covers (from the previous page's last key to its own, the last page
to the end): a known key in that range that the page lacks is gone at once. A read sends If-None-Match with the known ETag: an object that did
not change answers 304 and no byte moves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from groundwork.connectors.port import ConnectorError, FetchResult, ListingPage, SourceItem
from groundwork.connectors.s3_bucket import KIND, S3BucketSettings, object_item, s3_error, selected


def _translated(exc: Exception, item_id: str | None) -> ConnectorError:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        meta = exc.response.get("ResponseMetadata", {})
        headers = meta.get("HTTPHeaders", {}) or {}
        return s3_error(
            item_id,
            str(error.get("Code", "error")),
            meta.get("HTTPStatusCode"),
            str(error.get("Message", "")),
            headers.get("retry-after"),
        )
    return ConnectorError(KIND, item_id, f"{type(exc).__name__}: {exc}", retryable=True)


class S3BucketConnector:
    kind = KIND
    complete_listing = True
    sorted_listing = True  # ListObjectsV2: keys in UTF-8 binary order
    lasting_locations = False  # a moved object's old key holds nothing

    def __init__(self, client: Any, settings: S3BucketSettings) -> None:
        self.client = client
        self.settings = settings

    def _tags(self, key: str) -> dict[str, str] | None:
        if self.settings.subjects_tag is None:
            return None
        try:
            answer = self.client.get_object_tagging(Bucket=self.settings.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise _translated(exc, key) from exc
        return {t["Key"]: t["Value"] for t in answer.get("TagSet", [])}

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        request: dict[str, Any] = {
            "Bucket": self.settings.bucket,
            "Prefix": self.settings.prefix,
            "MaxKeys": self.settings.page_size,
        }
        if cursor:
            request["StartAfter"] = cursor
        after = cursor
        while True:
            try:
                answer = self.client.list_objects_v2(**request)
            except (ClientError, BotoCoreError) as exc:
                raise _translated(exc, None) from exc
            entries = {e["Key"]: e for e in answer.get("Contents", [])}
            keys = selected(self.settings, list(entries))
            items = [object_item(self.settings, entries[k], self._tags(k)) for k in keys]
            last = answer["Contents"][-1]["Key"] if answer.get("Contents") else after
            more = bool(answer.get("IsTruncated"))
            # the last page always comes, empty or not: its range runs to the end
            if items or last != after or not more:
                yield ListingPage(items, (), last, span=(after, last if more else None))
            if not more:
                return
            after = last
            request.pop("StartAfter", None)
            request["ContinuationToken"] = answer["NextContinuationToken"]

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        request: dict[str, Any] = {"Bucket": self.settings.bucket, "Key": item.item_id}
        if known_version:
            request["IfNoneMatch"] = f'"{known_version}"'
        try:
            answer = self.client.get_object(**request)
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status == 304 and known_version:
                return FetchResult(None, known_version, None)
            raise _translated(exc, item.item_id) from exc
        except BotoCoreError as exc:
            raise _translated(exc, item.item_id) from exc
        return FetchResult(
            answer["Body"],
            str(answer.get("ETag", item.version)).strip('"'),
            answer.get("ContentType"),
        )
