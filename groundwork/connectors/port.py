"""The connector port: how an external source (a bucket, a folder, a web
site, a Git repository) shows its items to the sync service.

A connector only lists and fetches. Every rule — which items changed, size
caps, registration policy, untrusted marking, deletions and permission
re-scoping — lives once in groundwork.services.connector_sync, so a new kind
of source cannot bypass it. The listing carries versions so that the service
can compare a whole page with the catalog in one set-based statement and read
bytes only for what is new or changed.

One conformance suite (tests/conformance/test_connector_port.py) is run over
every connector and the fake; this docstring and that suite say the same
thing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol, runtime_checkable

#: in a version token, what a listing appends when it cannot vouch for the
#: version (an mtime too recent to tell an edit by: the fsspec connector's
#: racy rule), followed by the moment it listed the item. Such an item is read
#: again by the next pass; what compares listings (the inbox's fingerprint)
#: leaves the mark out, so a racy file alone asks for no run.
RACY_MARK = ":racy@"


@dataclass(frozen=True)
class SourceItem:
    """One item as the source's listing shows it, before any byte is read."""

    item_id: str  # stable id inside the source: object key, canonical URL, repo path
    version: str  # ETag / commit id / Last-Modified / content hash: changes when the bytes change
    size: int | None  # bytes, when the listing knows it
    media_type: str | None  # a hint; registration still sniffs
    #: the source's permissions mapped to Groundwork subjects; None = the connector's default
    subjects: tuple[str, ...] | None
    #: extra citation fields, e.g. {"commit": ..., "path": ...} or {"url": ...}; a
    #: "filename" entry is the name registration checks the extension of and
    #: citations show (default: the item id)
    location: Mapping[str, str] = field(default_factory=dict)
    #: the item ids this item links to (a crawled page's links within the
    #: scope), kept with the item so the next listing can follow them without
    #: reading it (RecallsItems); None: no links kept (not a crawl, or too many)
    links: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RecalledItem:
    """What the catalog holds of an item a last pass recorded."""

    version: str
    links: tuple[str, ...] | None


@runtime_checkable
class RecallsItems(Protocol):
    """A connector whose listing is cheaper for knowing what the catalog
    holds: before listing, the sync service gives it every recorded item's
    version and links (a crawl revalidates a known page with a conditional
    GET and, answered 304 Not Modified, follows the links it had). Recalled
    state only saves requests: the listing stays what the source says."""

    def recall(self, known: Mapping[str, RecalledItem]) -> None: ...


@dataclass(frozen=True)
class ListingPage:
    """One page of a listing. The cursor is stored only after the page's new
    and changed items are registered, so a crashed pass resumes after the last
    page it finished rather than from the start (or past unregistered items)."""

    items: Sequence[SourceItem]  # new, changed or unchanged: the service compares versions
    deleted: Sequence[str]  # item ids the source reports gone (e.g. from a git diff)
    cursor: str | None  # opaque; the resume point after this page
    #: on the last page of a listing that cannot say what was deleted (a Git
    #: history rewritten: no diff from the last pass's commit), every item id
    #: the source holds now; the service treats every other known item as
    #: deleted. Complete, also when the pass resumed mid-listing.
    live: Sequence[str] | None = None
    #: what the pass records about itself in the connector's state, e.g. that
    #: a rewritten history was listed in full
    notes: Sequence[str] = ()
    #: of a `sorted_listing` connector: the id range (after, through] this page
    #: covers (None: unbounded), so every known id in it that the page does not
    #: list is gone now, not at the end of the listing. Ranges of successive
    #: pages meet (one's `through` is the next one's `after`); the first page
    #: of a listing from the start has `after` None, the last `through` None.
    span: tuple[str | None, str | None] | None = None


@dataclass(frozen=True)
class FetchResult:
    """The bytes of one item, or word that they have not changed."""

    stream: BinaryIO | None  # None when the source says not modified (conditional GET 304)
    version: str  # the version actually served (may refine the listing's, e.g. a web ETag)
    media_type: str | None


class ConnectorError(Exception):
    """Any failure talking to a source. Connectors raise it rather than return
    an empty page or stream, so a broken source is never read as "everything
    was deleted". `item_id` None means the whole listing failed; `retry_after`
    carries the source's Retry-After / SlowDown hint in seconds."""

    def __init__(
        self,
        kind: str,
        item_id: str | None,
        reason: str,
        retry_after: float | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(f"{kind}: {item_id or '<listing>'}: {reason}")
        self.kind = kind
        self.item_id = item_id
        self.reason = reason
        self.retry_after = retry_after
        self.retryable = retryable


@runtime_checkable
class Connector(Protocol):
    """A source of items for one connector instance (one tenant's bucket
    prefix, folder, site or repository).

    - `list_pages(cursor)` yields pages from the start (None) or from the
      point after the page that returned `cursor`; listing reads no item
      bytes. When `complete_listing` is True a pass that reaches the end has
      listed every live item, so the service treats ids it did not see as
      deleted; otherwise `ListingPage.deleted` reports deletions, or, when
      the source cannot (a rewritten history), the last page's `live` names
      every item id it holds.
    - A changed item comes back with a new `version`; an unchanged one with
      the same version, so the service reads nothing for it.
    - `fetch(item, known_version)` streams the item's bytes; when
      `known_version` is the version the source still serves it may answer
      `FetchResult(stream=None, ...)` (not modified).
    - When `sorted_listing` is True (with `complete_listing`), pages list
      items in ascending id order — Unicode code point order, which is UTF-8
      byte order: S3's ListObjectsV2 order, a sorted path listing — and each
      page's `span` names the id range it covers, also the first page of a
      listing resumed at `cursor` (its `after` is where the cursor left it).
      An id in a page's range that the page does not list is not at the
      source (or not selected by the instance's globs: as with a complete
      listing, an item the selection no longer takes is removed), so the
      service removes it at that page rather than after the whole listing.
      A listing whose order is not the byte order (a crawl, a Git diff)
      says False.
    - `lasting_locations` says whether an item's location keeps naming its
      bytes after the item moves (a Git commit and path do: history stays);
      when False (a key in a bucket, a path in a folder, a URL) a moved
      item's citations name its new place, since the old one is gone.
    - Every failure is a `ConnectorError` (retryable with `retry_after` when
      the source asked to slow down); nothing is swallowed into empty success.
    """

    kind: str  # "s3", "fsspec", "web", "git"
    complete_listing: bool
    sorted_listing: bool
    lasting_locations: bool

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]: ...

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult: ...
