"""One sync pass of a connector instance: the source's state mirrored into
the catalog, through the paths every other entry point uses.

A pass costs what changed: each listing page is compared with the catalog in
one statement (`ConnectorCatalog.compare_page`), and bytes are read only for
new, changed or previously failed items. Those go through registration's
rules (size cap and extension before any byte, sniffed type, quota, malware
scan; refusals recorded with their reason on the item) and
`register_incoming`'s write order. The page's cursor is stored only after its
items are recorded, so a crashed pass resumes after its last finished page
and never marks an item seen before its bytes are registered.

Deletions are what a complete listing did not list, what a page reports
deleted, or — when the source could not say (a rewritten Git history) — what
is known and not in the last page's `live` ids; they go through
`request_deletion` (unsearchable at once, tombstoned by the sweep) and permission changes through `change_subjects` (catalog and both
indexes). A new item whose bytes are those of a known item is recorded as its
alias, not registered: when the known item turns out gone by the end of the
pass (a rename or a move) the source simply changes hands, so nothing is
extracted or embedded again; when it is still there (a copy), the alias is
registered as a source of its own.

A sorted listing (`Connector.sorted_listing`: S3's key order) says which id
range each page covers, so its absentees are known at their page, in the
statement that compares the page (`compare_span`): a 100,000-key bucket's
deletion is unsearchable a page after the pass reaches it rather than after
the hundredth page. Such an item is made *gone*: its index rows stop being
live at once, and its catalog row waits for the end of the pass, because the
same bytes may still turn up under a later key (a move forward): that new id
then takes the source over and its rows are shown again, nothing extracted
or embedded again. What is still gone when the pass ends goes through
`request_deletion`, also after a crash (the resumed pass finishes it).
Known gap: the catalog does not know a gone source as leaving, so a version
of it that an ingest run publishes during the rest of the pass (registered by
an earlier pass, not yet published) is live again until the pass ends.

Errors are values per item: a retryable ConnectorError is retried with
backoff (the source's Retry-After when it gave one); what still fails is
recorded on the item (retried next pass) and the pass goes on. A listing that
cannot be read stops the pass, open, with its error: the next pass resumes it.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from groundwork.connectors.calls import TRIES, one_ahead, pause_for, spool, with_retries
from groundwork.connectors.catalog import (
    ConnectorCatalog,
    ConnectorInstance,
    ItemDelta,
    ItemRecord,
    KnownItem,
    PassCounts,
)
from groundwork.connectors.inbox import INBOX_KIND, Fingerprint
from groundwork.connectors.location import SourceLocation, bounded_location
from groundwork.connectors.port import (
    Connector,
    ConnectorError,
    ListingPage,
    RecalledItem,
    RecallsItems,
    SourceItem,
)
from groundwork.errors import InvalidRequest, NotFound, Refused
from groundwork.lifecycle import change_subjects, request_deletion
from groundwork.services.limits import check_quota
from groundwork.services.platform import PlatformPorts
from groundwork.stages.registration import IncomingFile, Registration, register_incoming
from groundwork.upload_policy import MAX_UPLOAD_BYTES, check_content, check_declared


@dataclass
class PassReport:
    pass_no: int
    resumed: bool = False
    seen: int = 0
    changed: int = 0  # new or changed items registered
    unchanged: int = 0
    deleted: int = 0
    rescoped: int = 0
    moved: int = 0  # renames / moves kept as their source
    failed: int = 0
    reads: int = 0  # fetches that moved bytes
    #: read, and the bytes found registered already (a verification read, a
    #: racy file read again, a changed token over the same bytes)
    confirmed: int = 0
    refused: list[str] = field(default_factory=list)  # "item: reason"
    #: of the refused: by the tenant's quota, kept to be tried again next pass
    over_quota: int = 0
    verified: int = 0  # items read again by their verification interval
    #: of the whole listing as this pass saw it (its items, versions and
    #: subjects): what the inbox sensor compares with a walk of the folder
    fingerprint: str = ""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the listing said of itself
    finished: bool = False

    @property
    def counts(self) -> PassCounts:
        return PassCounts(
            self.seen,
            self.changed + self.moved,
            self.deleted,
            self.failed,
            self.rescoped,
            self.errors[-1] if self.errors else None,
            tuple(self.notes),
        )


@dataclass(frozen=True)
class SyncSettings:
    max_item_bytes: int = MAX_UPLOAD_BYTES
    sleep: Callable[[float], None] = time.sleep
    #: items of a page read and registered at once: each is latency (a GET, a
    #: dozen catalog round trips), 96 ms on the loaded test machine, one at a
    #: time; under the catalog pool's 8 connections
    workers: int = 6
    #: a page that registered something asks for the tenant's ingest run; off
    #: when the pass runs inside that run (the inbox's registration step)
    request_ingest: bool = True
    #: an item registered as listed is read again once its record is this old:
    #: an edit that kept the version token (size and mtime restored) is found
    verify_after_seconds: float | None = None
    #: the origin of an item's new source; None: `connector:<instance>:<item>`
    origin_prefix: str | None = None


def run_pass(
    ports: PlatformPorts,
    catalog: ConnectorCatalog,
    instance: ConnectorInstance,
    connector: Connector,
    settings: SyncSettings | None = None,
) -> PassReport:
    """One pass over `instance`'s source; `ports` are behind the instance's tenant wall."""
    sync = _Pass(ports, catalog, instance, connector, settings or SyncSettings())
    return sync.run()


def sync_instance(
    ports: PlatformPorts,
    catalog: ConnectorCatalog,
    instance: ConnectorInstance,
    build: Callable[[ConnectorInstance], Connector],
    settings: SyncSettings | None = None,
) -> PassReport:
    """A pass of a stored instance: a connector that cannot be built (a
    missing secret, a bad configuration) is a failed pass in its state, not
    an exception that would stop the other instances. The inbox instance is
    passed by its tenant's registration step alone (groundwork.services.
    inbox_sync), with the inbox's settings."""
    if instance.kind == INBOX_KIND:
        raise Refused(
            f"{instance.name} is the tenant's inbox folder, passed by its registration step",
            f"drop the files in the folder, or run `groundwork ingest {instance.tenant_id}`",
            code="invalid",
        )
    try:
        connector = build(instance)
    except ConnectorError as exc:
        start = catalog.begin_pass(instance.tenant_id, instance.instance_id, True)
        report = PassReport(start.pass_no, start.resumed, errors=[exc.reason])
        catalog.finish_pass(
            instance.tenant_id,
            instance.instance_id,
            start.pass_no,
            report.counts,
            keep_cursor=True,
            finished=False,
        )
        return report
    return run_pass(ports, catalog, instance, connector, settings)


@dataclass
class _Fetched:
    delta: ItemDelta
    item: SourceItem
    version: str
    path: Path | None  # None: not modified
    sha256: str | None
    size: int


class _Pass:
    def __init__(
        self,
        ports: PlatformPorts,
        catalog: ConnectorCatalog,
        instance: ConnectorInstance,
        connector: Connector,
        settings: SyncSettings,
    ) -> None:
        self.ports = ports
        self.catalog = catalog
        self.instance = instance
        self.tenant = instance.tenant_id
        self.connector = connector
        self.settings = settings
        self.report = PassReport(0)
        self.listed: list[str] = []
        self.tally = threading.Lock()  # items are fetched and registered in parallel
        #: absentees read from each page's id range rather than from the whole listing
        self.by_span = connector.complete_listing and connector.sorted_listing
        self.work = Path(tempfile.mkdtemp(prefix="gw-connector-"))
        self.walk = Fingerprint()
        self.quota_on: bool | None = None  # read at the first item that needs it

    # the pass ---------------------------------------------------------------------------
    def run(self) -> PassReport:
        complete = self.connector.complete_listing
        start = self.catalog.begin_pass(self.tenant, self.instance.instance_id, complete)
        self.report = PassReport(start.pass_no, start.resumed)
        try:
            if not complete:
                self._retry_failed()
            self._recall()
            if not self._list_all(start.cursor):
                self._close(finished=False)
                return self.report
            if self.by_span:
                # every page, before the crash too, removed its own absentees
                self._finish_gone()
            elif complete and not start.resumed:
                # a resumed pass did not see the pages before its crash: its
                # absences wait for the next whole pass
                self._delete(
                    self.catalog.unseen_items(self.tenant, self.instance.instance_id, self.listed)
                )
            self._settle_aliases()
            self.report.fingerprint = self.walk.value
            self._close(finished=True)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
        return self.report

    def _recall(self) -> None:
        """A connector that lists better knowing the catalog (a crawl) is told
        each recorded item's version and links: items registered, refused or
        kept as an alias (a failed one is asked for again in full)."""
        if isinstance(self.connector, RecallsItems):
            known = self.catalog.known_items(
                self.tenant, self.instance.instance_id, states=["ok", "refused", "alias"]
            )
            self.connector.recall({k.item_id: RecalledItem(k.version, k.links) for k in known})

    def _close(self, finished: bool) -> None:
        self.report.finished = finished
        self.catalog.finish_pass(
            self.tenant,
            self.instance.instance_id,
            self.report.pass_no,
            self.report.counts,
            keep_cursor=not self.connector.complete_listing,
            finished=finished,
        )

    def _list_all(self, cursor: str | None) -> bool:
        """Every page from `cursor` on; a listing error is retried from the
        last stored cursor, and after the last try the pass stops open."""
        for attempt in range(TRIES):
            try:
                for page in one_ahead(self.connector.list_pages(cursor)):
                    self._page(page)
                    cursor = page.cursor
                return True
            except ConnectorError as exc:
                if not exc.retryable or attempt == TRIES - 1:
                    self.report.errors.append(exc.reason)
                    return False
                self.settings.sleep(pause_for(exc, attempt))
        return False

    def _page(self, page: ListingPage) -> None:
        listed = [(i.item_id, i.version, self._subjects(i)) for i in page.items]
        for entry in listed:
            self.walk.add(*entry)
        self.report.seen += len(listed)
        self.listed.extend(i.item_id for i in page.items)
        absent: list[KnownItem] = []
        verify = self.settings.verify_after_seconds
        if self.by_span and page.span is not None:
            deltas, absent = self.catalog.compare_span(
                self.tenant,
                self.instance.instance_id,
                self.report.pass_no,
                listed,
                page.span,
                verify_after=verify,
            )
        else:
            deltas = self.catalog.compare_page(
                self.tenant,
                self.instance.instance_id,
                self.report.pass_no,
                listed,
                verify_after=verify,
            )
        self.report.unchanged += len(listed) - len(deltas)
        items = {i.item_id: i for i in page.items}
        before = self.report.changed
        records = self._take([(d, items[d.item_id]) for d in deltas])
        self.catalog.record_items(
            self.tenant, self.instance.instance_id, self.report.pass_no, records
        )
        if self.report.changed > before and self.settings.request_ingest:
            # as registration does: the ingest run is asked for now, not when the
            # pass ends (a 100,000-key listing takes ~27 s); one queued run per tenant
            self.ports.ingest_trigger().request_ingest(self.tenant)
        # after the page's items: a rename within the page is then an alias that
        # takes the source over here, with no moment unsearchable
        self._gone(absent)
        if page.deleted:
            gone = self.catalog.known_items(
                self.tenant, self.instance.instance_id, item_ids=list(page.deleted)
            )
            self._delete(gone)
        self.report.notes += [n for n in page.notes if n not in self.report.notes]
        if page.live is not None:
            # every page of the listing is recorded: what is known and not live
            # is gone; before the cursor moves, so a crash here lists it again
            self._delete(
                self.catalog.unseen_items(self.tenant, self.instance.instance_id, page.live)
            )
        # only now: a crash before this lists the page again, and its registered
        # items compare as unchanged
        self.catalog.save_cursor(self.tenant, self.instance.instance_id, page.cursor)

    def _subjects(self, item: SourceItem) -> tuple[str, ...]:
        return tuple(sorted(set(item.subjects or self.instance.subjects)))

    # items --------------------------------------------------------------------------------
    def _take(self, work: Sequence[tuple[ItemDelta, SourceItem]]) -> list[ItemRecord]:
        """Reads and registers a page's items in parallel (each is a few round
        trips to the source and the catalog: latency, not CPU); re-scoping,
        and recognising a known item's bytes, happen once per page."""
        records = [self._rescope(d, i) for d, i in work if d.kind == "rescope" and d.source_id]
        reading = [
            (self._returned(d) if d.kind == "returned" else d, i)
            for d, i in work
            if not (d.kind == "rescope" and d.source_id)
        ]
        # under a quota, one at a time in listing order: two registrations
        # checked at once could both pass the last free place, and which file
        # the limit refuses is then the same on every pass
        workers = 1 if self._quota_applies() else self.settings.workers
        with ThreadPoolExecutor(workers) as pool:
            outcomes = list(pool.map(lambda w: self._fetch(*w), reading))
            records += [o for o in outcomes if isinstance(o, ItemRecord)]
            fetched = [o for o in outcomes if isinstance(o, _Fetched)]
            twins = self._twins([f.sha256 for f in fetched if f.delta.kind == "new" and f.sha256])
            aliases = [f for f in fetched if f.delta.kind == "new" and f.sha256 in twins]
            for f in aliases:
                twin = twins[f.sha256]
                if twin.state == "gone":  # made gone earlier in this pass: a move forward
                    record = self._moved_forward(f, twin)
                    # a second new id with these bytes is a copy of this one
                    twins[f.sha256] = KnownItem(
                        record.item_id,
                        record.version,
                        record.source_id,
                        record.origin,
                        record.sha256,
                        "ok",
                        record.subjects,
                    )
                    records.append(record)
                    continue
                records.append(self._record(f.item, f.version, "alias", twin, f.sha256))
            registering = [f for f in fetched if f not in aliases]
            records += list(pool.map(self._register, registering))
        return records

    def _twins(self, shas: Sequence[str]) -> dict[str | None, KnownItem]:
        """Known items holding these bytes: a new id with them is a rename, a move or a copy."""
        twins: dict[str | None, KnownItem] = {}
        if shas:
            for known in self.catalog.known_items(
                self.tenant, self.instance.instance_id, sha256s=shas, states=["ok", "gone"]
            ):
                # a live twin first: a copy of an item that is there is a copy
                if twins.get(known.sha256) is None or twins[known.sha256].state == "gone":
                    twins[known.sha256] = known
        return twins

    def _record(
        self,
        item: SourceItem,
        version: str,
        state: str,
        known: ItemDelta | KnownItem | None = None,
        sha256: str | None = None,
        error: str | None = None,
    ) -> ItemRecord:
        return ItemRecord(
            item.item_id,
            version,
            state,  # type: ignore[arg-type]
            self._subjects(item),
            known.source_id if known else None,
            known.origin if known else None,
            sha256 if sha256 is not None else (known.sha256 if known else None),
            error,
            bounded_location(item.location),
            item.links,
        )

    def _rescope(self, delta: ItemDelta, item: SourceItem) -> ItemRecord:
        assert delta.source_id is not None
        try:
            change_subjects(
                self.ports.catalog,
                self.ports.indexes(),
                self.tenant,
                delta.source_id,
                self._subjects(item),
            )
            with self.tally:
                self.report.rescoped += 1
        except NotFound:
            pass  # deleted meanwhile through another path: nothing to re-scope
        return self._record(item, item.version, "ok", delta)

    def _refused(self, delta: ItemDelta, item: SourceItem, reason: str) -> ItemRecord:
        """Kept with the listed version (not tried again until it changes) and
        with the source an earlier version registered, which stays served."""
        with self.tally:
            self.report.refused.append(f"{item.item_id}: {reason}")
        return self._record(item, item.version, "refused", delta, error=reason)

    def _waiting(self, delta: ItemDelta, item: SourceItem, refused: Refused) -> ItemRecord:
        """Over the tenant's quota: nothing kept, and — unlike a refusal by
        policy — tried again by the next pass (state failed), since the limit
        may be raised or room made; the earlier version stays served."""
        reason = (
            f"{refused.code}: {refused.message.removesuffix('; nothing was stored')}; "
            f"tried again by the next pass ({refused.alternative})"
        )
        with self.tally:
            self.report.refused.append(f"{item.item_id}: {reason}")
            self.report.over_quota += 1
        return self._record(
            item, delta.known_version or item.version, "failed", delta, error=reason
        )

    def _quota_applies(self) -> bool:
        """Whether the tenant has a quota: read once per pass, not per item."""
        if self.quota_on is None:
            tenant = self.ports.catalog.get_tenant(self.tenant)
            self.quota_on = tenant is not None and bool(tenant.limits.quota)
        return self.quota_on

    def _check_quota(self, size: int, origin: str) -> None:
        """The tenant's quota (groundwork.services.limits.check_quota)."""
        if self._quota_applies():
            check_quota(self.ports.catalog, self.tenant, size, origin)

    def _origin(self, delta: ItemDelta, item: SourceItem) -> str:
        if delta.origin:
            return delta.origin
        if self.settings.origin_prefix is not None:
            return f"{self.settings.origin_prefix}{item.item_id}"
        return f"connector:{self.instance.instance_id}:{item.item_id}"

    def _failed(self, delta: ItemDelta, item: SourceItem, exc: ConnectorError) -> ItemRecord:
        with self.tally:
            self.report.failed += 1
            self.report.errors.append(f"{item.item_id}: {exc.reason}")
        return self._record(
            item, delta.known_version or item.version, "failed", delta, error=exc.reason
        )

    def _fetch(self, delta: ItemDelta, item: SourceItem) -> _Fetched | ItemRecord:
        filename = self._filename(item)
        cap = self.settings.max_item_bytes
        declared = check_declared(filename, item.size or 0, cap)
        if declared is not None:
            return self._refused(delta, item, f"{declared.reason}: {declared.message}")
        if item.size is not None and delta.kind != "verify":
            # before the read, as an upload's declared size: a bucket over its
            # tenant's quota is not downloaded again on every pass
            try:
                self._check_quota(item.size, self._origin(delta, item))
            except Refused as exc:
                return self._waiting(delta, item, exc)
        # a verification read asks for the bytes whatever the version says
        known = delta.known_version if delta.source_id and delta.kind != "verify" else None
        if delta.kind == "verify":
            with self.tally:
                self.report.verified += 1
        try:
            result = with_retries(lambda: self.connector.fetch(item, known), self.settings.sleep)
        except ConnectorError as exc:
            return self._failed(delta, item, exc)
        if result.stream is None:
            return _Fetched(delta, item, result.version, None, delta.sha256, 0)
        with self.tally:
            self.report.reads += 1
        try:
            spooled = spool(result.stream, cap, self.work, self.connector.kind)
        except ConnectorError as exc:
            return self._failed(delta, item, exc)
        if spooled is None:
            return self._refused(delta, item, f"too-large: over the limit of {cap} bytes")
        path, sha256, size = spooled
        return _Fetched(delta, item, result.version, path, sha256, size)

    def _filename(self, item: SourceItem) -> str:
        return _filename_of(item.item_id, item.location)

    def _register(self, fetched: _Fetched) -> ItemRecord:
        delta, item = fetched.delta, fetched.item
        if fetched.path is None:  # not modified: only the version token moved
            record = self._record(item, fetched.version, "ok", delta)
            if delta.known_subjects is not None and tuple(delta.known_subjects) != self._subjects(
                item
            ):
                self._rescope(delta, item)
            return record
        filename = self._filename(item)
        origin = self._origin(delta, item)
        if not (delta.source_id and fetched.sha256 == delta.sha256):
            # the bytes a source already holds add nothing (a verification read)
            try:
                self._check_quota(fetched.size, origin)
            except Refused as exc:
                return self._waiting(delta, item, exc)
        media_type = self.ports.sniff_file(fetched.path, filename)
        refused = check_content(filename, media_type)
        if refused is not None:
            return self._refused(delta, item, f"{refused.reason}: {refused.message}")
        path = fetched.path
        try:
            outcome = register_incoming(
                self.ports.catalog,
                self.ports.blobs,
                IncomingFile(
                    self.tenant,
                    origin,
                    filename,
                    self._subjects(item),
                    media_type,
                    # on the new version: its citations name the commit and path, the URL...
                    location=bounded_location(item.location),
                ),
                sha256=fetched.sha256 or "",
                size=fetched.size,
                write=lambda key: self.ports.blobs.put_file(key, path),
                scanner=self.ports.scanner(),
            )
        except InvalidRequest as exc:
            # e.g. its source is still being deleted (an item gone and back before
            # the sweep ran): the item's failure, asked for again next pass
            return self._failed(
                delta, item, ConnectorError(self.connector.kind, item.item_id, str(exc))
            )
        finally:
            path.unlink(missing_ok=True)
        assert isinstance(outcome, Registration)  # replace=True never needs approval
        if outcome.quarantined is not None:
            return self._refused(delta, item, f"malware-found: {outcome.quarantined}")
        source_id = outcome.source_id
        known = delta.known_subjects
        if delta.source_id == source_id and known is not None and known != self._subjects(item):
            self._rescope(delta, item)
        with self.tally:
            if outcome.created:
                self.report.changed += 1
            else:
                self.report.confirmed += 1
        return ItemRecord(
            item.item_id,
            fetched.version,
            "ok",
            self._subjects(item),
            source_id,
            origin,
            fetched.sha256,
            location=bounded_location(item.location),
            links=item.links,
        )

    # deletions and aliases ----------------------------------------------------------------
    def _delete(self, gone: Sequence[KnownItem]) -> None:
        """Items the source no longer has: an alias of the same bytes takes
        the source over (a move); otherwise the source goes through the
        deletion path."""
        if not gone:
            return
        aliases = {
            a.source_id: a
            for a in self.catalog.known_items(
                self.tenant, self.instance.instance_id, states=["alias"]
            )
        }
        forget = []
        for known in gone:
            forget.append(known.item_id)
            heir = aliases.pop(known.source_id, None) if known.state == "ok" else None
            if heir is not None:
                self._take_over(heir)
                continue
            if known.state == "alias" or known.source_id is None:
                continue
            self._delete_source(known.source_id)
        self.catalog.forget_items(self.tenant, self.instance.instance_id, forget)

    def _delete_source(self, source_id: str) -> None:
        """Gone at the source: deleted through the one deletion path."""
        try:
            request_deletion(self.ports.catalog, self.ports.indexes(), self.tenant, source_id)
            self.report.deleted += 1
        except NotFound:
            pass  # already deleted through another path

    def _gone(self, absent: Sequence[KnownItem]) -> None:
        """A page's absentees (sorted listing): an alias of the same bytes
        takes the source over (a move back to an earlier id); otherwise the
        source stops being searchable now and the item is kept gone until the
        pass ends (`_finish_gone`), for a move forward to claim."""
        if not absent:
            return
        aliases = {
            a.source_id: a
            for a in self.catalog.known_items(
                self.tenant, self.instance.instance_id, states=["alias"]
            )
        }
        forget, gone = [], []
        for known in absent:
            heir = aliases.pop(known.source_id, None) if known.state == "ok" else None
            if heir is not None:
                self._take_over(heir)
                forget.append(known.item_id)
            elif known.state == "alias" or known.source_id is None:
                forget.append(known.item_id)
            else:
                self._show(known.source_id, False)
                gone.append(replace(_as_record(known), state="gone"))
        self.catalog.record_items(self.tenant, self.instance.instance_id, self.report.pass_no, gone)
        self.catalog.forget_items(self.tenant, self.instance.instance_id, forget)

    def _show(self, source_id: str, live: bool) -> None:
        """A gone item's index rows hidden (as request_deletion hides them,
        without marking the source, which a move may still claim), or shown
        again: the versions its models publish, as publication left them."""
        indexes = self.ports.indexes()
        if not live:
            indexes.keywords.set_live(self.tenant, source_id, None, False)
            for vectors in indexes.vectors:
                vectors.set_live(self.tenant, source_id, None, False)
            return
        published = self.catalog.live_versions(self.tenant, source_id)
        for version_id in sorted(set(published.values())):
            indexes.keywords.set_live(self.tenant, source_id, version_id, True)
        for vectors in indexes.vectors:
            if vectors.model.key in published:
                vectors.set_live(self.tenant, source_id, published[vectors.model.key], True)

    def _moved_forward(self, fetched: _Fetched, twin: KnownItem) -> ItemRecord:
        """A new id holding the bytes of an item made gone earlier in this
        pass: it takes that source over (recorded before the gone row is
        forgotten, so a crash between never deletes what it now holds)."""
        record = self._record(fetched.item, fetched.version, "ok", twin, fetched.sha256)
        assert twin.source_id is not None  # only items with a source are made gone
        # before the item is recorded: a crash between repeats the move (the gone
        # row is still there), never leaves the source named by the old place
        self._relocate(twin.source_id, self._filename(fetched.item), record.location)
        self.catalog.record_items(
            self.tenant, self.instance.instance_id, self.report.pass_no, [record]
        )
        self.catalog.forget_items(self.tenant, self.instance.instance_id, [twin.item_id])
        if twin.subjects != record.subjects and record.subjects:
            with contextlib.suppress(NotFound):
                change_subjects(
                    self.ports.catalog,
                    self.ports.indexes(),
                    self.tenant,
                    twin.source_id,
                    record.subjects,
                )
        self._show(twin.source_id, True)
        with self.tally:
            self.report.moved += 1
        return record

    def _returned(self, delta: ItemDelta) -> ItemDelta:
        """An item made gone earlier in the pass listed again (its page listed
        twice after a crash, or put back meanwhile): shown again, then read
        conditionally like any changed item (unchanged bytes answer 304)."""
        if delta.source_id is not None:
            self._show(delta.source_id, True)
        return replace(delta, kind="retry")

    def _finish_gone(self) -> None:
        """The end of a sorted pass: what is still gone was not moved."""
        gone = self.catalog.known_items(self.tenant, self.instance.instance_id, states=["gone"])
        if not gone:
            return
        holders = {
            k.source_id
            for k in self.catalog.known_items(
                self.tenant,
                self.instance.instance_id,
                sha256s=[g.sha256 for g in gone if g.sha256],
                states=["ok"],
            )
        }
        for known in gone:
            if known.source_id is None or known.source_id in holders:
                continue  # taken over by a move, the crash came before the row was forgotten
            self._delete_source(known.source_id)
        self.catalog.forget_items(self.tenant, self.instance.instance_id, [g.item_id for g in gone])

    def _take_over(self, heir: KnownItem) -> None:
        record = replace(_as_record(heir), state="ok")
        if heir.source_id is not None:  # before it is recorded, as in _moved_forward
            self._relocate(
                heir.source_id, _filename_of(heir.item_id, dict(heir.location)), heir.location
            )
        self.catalog.record_items(
            self.tenant, self.instance.instance_id, self.report.pass_no, [record]
        )
        self.report.moved += 1
        if heir.source_id is not None and heir.subjects is not None:
            with contextlib.suppress(NotFound):  # deleted meanwhile through another path
                change_subjects(
                    self.ports.catalog,
                    self.ports.indexes(),
                    self.tenant,
                    heir.source_id,
                    heir.subjects,
                )

    def _relocate(self, source_id: str, filename: str, location: SourceLocation) -> None:
        """A move keeps its source and version; the citations of that version
        name where the bytes are now, not the path they left, unless the old
        place still names them (a Git commit and path)."""
        if not self.connector.lasting_locations:
            self.ports.catalog.relocate_source(self.tenant, source_id, filename, dict(location))

    def _settle_aliases(self) -> None:
        """Aliases whose original is still there are copies: registered as
        sources of their own (read again: the bytes were not kept)."""
        left = self.catalog.known_items(self.tenant, self.instance.instance_id, states=["alias"])
        work = []
        for alias in left:
            item = SourceItem(
                alias.item_id,
                alias.version,
                None,
                None,
                alias.subjects,
                dict(alias.location),
                alias.links,
            )
            delta = ItemDelta(alias.item_id, "new", None, None, None, None, alias.sha256)
            work.append((delta, item))
        records = []
        for delta, item in work:
            outcome = self._fetch(delta, item)
            records.append(outcome if isinstance(outcome, ItemRecord) else self._register(outcome))
        self.catalog.record_items(
            self.tenant, self.instance.instance_id, self.report.pass_no, records
        )

    def _retry_failed(self) -> None:
        """Incremental listings do not list a failed item again: retry it by id."""
        failed = self.catalog.known_items(self.tenant, self.instance.instance_id, states=["failed"])
        work = [
            (
                ItemDelta(
                    k.item_id,
                    "retry",
                    k.version if k.source_id else None,
                    k.source_id,
                    k.origin,
                    k.subjects,
                    k.sha256,
                ),
                SourceItem(k.item_id, k.version, None, None, k.subjects, dict(k.location), k.links),
            )
            for k in failed
        ]
        records = self._take(work)
        self.catalog.record_items(
            self.tenant, self.instance.instance_id, self.report.pass_no, records
        )


def _filename_of(item_id: str, location: Mapping[str, str]) -> str:
    """The name an item is registered under: its location's `filename` (a web
    page's, an S3 key's below the prefix), else its id."""
    return location.get("filename") or item_id


def _as_record(known: KnownItem) -> ItemRecord:
    """A known item written back as it is (its state to be replaced)."""
    return ItemRecord(
        known.item_id,
        known.version,
        known.state,
        known.subjects,
        known.source_id,
        known.origin,
        known.sha256,
        location=known.location,
        links=known.links,
    )
