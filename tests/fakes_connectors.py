"""An in-memory connector: the port's reference behaviour for the sync
service's unit tests, and a subject of the connector conformance suite.

Items are kept in id order; a listing is complete (ids not listed are gone),
pages resume after the cursor (the last id of the previous page), and the
version is a content hash. With `sorted_listing` (the default) each page names
the id range it covers; without, it is a complete listing that only the end
of the pass can read deletions from. Faults are injected per item or for the listing,
as the ConnectorError a real source would raise."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field

from groundwork.connectors.port import ConnectorError, FetchResult, ListingPage, SourceItem


@dataclass
class FakeConnector:
    kind: str = "fake"
    complete_listing: bool = True
    sorted_listing: bool = True
    lasting_locations: bool = False
    page_size: int = 100
    items: dict[str, tuple[bytes, tuple[str, ...] | None]] = field(default_factory=dict)
    #: item id -> errors raised by its next fetches, one per call (then it works)
    fetch_faults: dict[str, list[ConnectorError]] = field(default_factory=dict)
    listing_faults: list[ConnectorError] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)  # every fetch that read bytes

    def put(self, item_id: str, data: bytes, subjects: tuple[str, ...] | None = None) -> str:
        self.items[item_id] = (data, subjects)
        return item_id

    def remove(self, item_id: str) -> None:
        del self.items[item_id]

    def _item(self, item_id: str) -> SourceItem:
        data, subjects = self.items[item_id]
        return SourceItem(
            item_id=item_id,
            version=hashlib.sha256(data).hexdigest()[:16],
            size=len(data),
            media_type=None,
            subjects=subjects,
            location={"key": item_id},
        )

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        if self.listing_faults:
            raise self.listing_faults.pop(0)
        ids = sorted(i for i in self.items if cursor is None or i > cursor)
        after = cursor
        for start in range(0, len(ids) or 1, self.page_size):
            page = ids[start : start + self.page_size]
            through = None if start + self.page_size >= len(ids) else page[-1]
            span = (after, through) if self.sorted_listing else None
            yield ListingPage(
                [self._item(i) for i in page], (), page[-1] if page else cursor, span=span
            )
            after = through

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        faults = self.fetch_faults.get(item.item_id)
        if faults:
            raise faults.pop(0)
        if item.item_id not in self.items:
            raise ConnectorError(self.kind, item.item_id, "not found", retryable=False)
        current = self._item(item.item_id)
        if known_version == current.version:
            return FetchResult(None, current.version, None)
        self.fetches.append(item.item_id)
        return FetchResult(io.BytesIO(self.items[item.item_id][0]), current.version, None)
