"""What the sync service and the control plane keep about connectors: the
ConnectorCatalog port and its records.

An instance's configuration never holds a secret: `secret_refs` names where
one is (`env:VARIABLE` or `file:/path/the/operator/controls`), and only the
adapter that builds the connector reads it, when it builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

#: gone: removed at its page of a sorted listing, its source not searchable,
#: kept until the pass ends for a move to a later id to take over
ItemState = Literal["ok", "refused", "failed", "alias", "gone"]
#: returned: an item made gone earlier in this pass is listed again; verify:
#: listed as recorded, but its last read is older than the pass's verification
#: interval (an edit that kept the version token is found by reading it)
DeltaKind = Literal["new", "changed", "rescope", "retry", "returned", "verify"]


@dataclass(frozen=True)
class ConnectorInstance:
    instance_id: str
    tenant_id: str
    kind: str
    name: str
    config: Mapping[str, Any]
    secret_refs: Mapping[str, str]
    subjects: tuple[str, ...]  # for items whose source gives none
    paused: bool = False
    freshness_seconds: int = 3600
    interval_seconds: int = 300
    created_at: datetime | None = None


@dataclass(frozen=True)
class PassStart:
    pass_no: int
    cursor: str | None
    resumed: bool  # a crashed pass taken up at its stored cursor


@dataclass(frozen=True)
class ItemDelta:
    """A listed item the catalog does not hold as it is listed."""

    item_id: str
    kind: DeltaKind
    known_version: str | None
    source_id: str | None
    origin: str | None
    known_subjects: tuple[str, ...] | None
    sha256: str | None = None


@dataclass(frozen=True)
class KnownItem:
    item_id: str
    version: str
    source_id: str | None
    origin: str | None
    sha256: str | None
    state: ItemState
    subjects: tuple[str, ...] | None = None
    #: where the last listing showed it (bounded, groundwork/connectors/location.py):
    #: an item retried by id or settled as a copy is registered with it
    location: tuple[tuple[str, str], ...] = ()
    links: tuple[str, ...] | None = None  # as the listing gave them (SourceItem.links)


@dataclass(frozen=True)
class ItemRecord:
    """An item's state after a pass handled it."""

    item_id: str
    version: str
    state: ItemState
    subjects: tuple[str, ...] | None = None
    source_id: str | None = None
    origin: str | None = None
    sha256: str | None = None
    last_error: str | None = None
    location: tuple[tuple[str, str], ...] = ()
    links: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PassCounts:
    seen: int = 0
    changed: int = 0
    deleted: int = 0
    failed: int = 0
    rescoped: int = 0
    last_error: str | None = None
    #: what the pass said about itself (groundwork.connectors.port.ListingPage.notes)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectorState:
    """What the control plane shows of one instance."""

    instance: ConnectorInstance
    last_pass_no: int
    last_started: datetime | None
    last_finished: datetime | None
    counts: PassCounts
    lag_seconds: float | None  # since the start of the last finished pass: how stale it may be
    item_errors: Sequence[tuple[str, str]] = field(default_factory=tuple)  # (item id, reason)
    items: int = 0


class ConnectorCatalog(Protocol):
    """Connector instances, their cursors, per-item state and pass records.

    - `compare_page` is one read-only statement: it returns the listed items
      whose version or subjects do not match (new, changed, re-permissioned,
      or failed before and due again) and, given `verify_after`, those
      registered as listed whose record is older than that many seconds
      (kind `verify`); unchanged ones cost nothing more.
    - `save_cursor` is called only after the page's items are recorded, so a
      pass that crashed resumes (`begin_pass`) after its last finished page.
    - `unseen_items(listed)` after a complete listing are the items the
      source no longer has.
    """

    def add_instance(self, instance: ConnectorInstance) -> ConnectorInstance: ...

    def instances(
        self, tenant_id: str | None = None, kind: str | None = None
    ) -> list[ConnectorInstance]: ...

    def instance(self, tenant_id: str, name: str) -> ConnectorInstance | None:
        """By name or instance id."""
        ...

    def due_instances(self, kind: str, *, paused_behind: bool = False) -> list[ConnectorInstance]:
        """Unpaused instances of `kind`, of every tenant, whose interval has passed
        since their last pass began (or whose last pass stopped open). With
        `paused_behind`, in the same statement, also the paused ones behind
        their freshness target (no finished pass began within it): no run
        passes them, so only the control plane can show that they are stale."""
        ...

    def set_paused(self, tenant_id: str, instance_id: str, paused: bool) -> bool: ...

    def remove_instance(self, tenant_id: str, instance_id: str) -> bool: ...

    def begin_pass(self, tenant_id: str, instance_id: str, complete_listing: bool) -> PassStart: ...

    def compare_page(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        listed: Sequence[tuple[str, str, tuple[str, ...]]],
        *,
        verify_after: float | None = None,
    ) -> list[ItemDelta]:
        """`listed` is (item id, version, effective subjects) per item."""
        ...

    def compare_span(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        listed: Sequence[tuple[str, str, tuple[str, ...]]],
        span: tuple[str | None, str | None],
        *,
        verify_after: float | None = None,
    ) -> tuple[list[ItemDelta], list[KnownItem]]:
        """`compare_page` for a page of a sorted listing, and in the same
        statement the known items (not already gone) whose ids fall in the
        page's range (after, through] — in byte order, None unbounded — and
        that the page does not list: gone at the source."""
        ...

    def live_versions(self, tenant_id: str, source_id: str) -> dict[str, str]:
        """The version each embedding model publishes for a source (model key
        -> version id): the index rows to show again when an item made gone
        at its page turns out moved."""
        ...

    def record_items(
        self, tenant_id: str, instance_id: str, pass_no: int, records: Sequence[ItemRecord]
    ) -> None: ...

    def save_cursor(self, tenant_id: str, instance_id: str, cursor: str | None) -> None: ...

    def known_items(
        self,
        tenant_id: str,
        instance_id: str,
        *,
        item_ids: Sequence[str] | None = None,
        sha256s: Sequence[str] | None = None,
        states: Sequence[ItemState] | None = None,
    ) -> list[KnownItem]: ...

    def unseen_items(
        self, tenant_id: str, instance_id: str, listed: Sequence[str]
    ) -> list[KnownItem]: ...

    def forget_items(self, tenant_id: str, instance_id: str, item_ids: Sequence[str]) -> None: ...

    def finish_pass(
        self,
        tenant_id: str,
        instance_id: str,
        pass_no: int,
        counts: PassCounts,
        *,
        keep_cursor: bool,
        finished: bool = True,
    ) -> None:
        """Close the pass record. `finished` False: it stopped on an error and
        stays open, so the next pass resumes at the cursor. `keep_cursor`
        False (complete listings): the next pass lists from the start."""
        ...

    def items_due(
        self, kind: str, tenant_ids: Sequence[str], verify_after_seconds: float
    ) -> set[str]:
        """The tenants (of those given) whose instance of `kind` holds an item
        its next pass reads again: failed before (retried; a quota refusal
        among them), listed with a version it could not vouch for
        (groundwork.connectors.port.RACY_MARK), or registered as listed longer than
        `verify_after_seconds` ago (due for its verification read). One
        statement for every tenant: the hourly rescan asks it once."""
        ...

    def state(self, tenant_id: str, instance_id: str) -> ConnectorState | None: ...

    def source_ids(self, tenant_id: str, instance_id: str) -> list[str]: ...
