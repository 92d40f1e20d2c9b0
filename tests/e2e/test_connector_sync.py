"""The sync service over the fake connector and the real catalog: a pass
costs what changed, deletions and permission changes go through their paths,
renames keep their source, errors stay their item's, a crashed pass resumes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.port import ConnectorError, FetchResult, ListingPage, SourceItem
from groundwork.services.connector_sync import PassReport, SyncSettings, run_pass
from resources.composition.platform import Platform
from resources.postgres.connectors import PostgresConnectorCatalog
from tests.fakes_connectors import FakeConnector


@dataclass
class Sync:
    platform: Platform
    tenant: str
    connector: FakeConnector
    instance: ConnectorInstance
    catalog: PostgresConnectorCatalog
    pauses: list[float] = field(default_factory=list)

    def run(self, connector: object | None = None, **settings: int) -> PassReport:
        return run_pass(
            self.platform.for_tenant(self.tenant),
            self.catalog,
            self.instance,
            connector or self.connector,  # type: ignore[arg-type]
            SyncSettings(sleep=self.pauses.append, **settings),
        )

    def sources(self) -> dict[str, tuple[str, tuple[str, ...], int]]:
        """origin -> (state, subjects, versions)"""
        with self.platform.pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.origin, s.state, s.subjects, (SELECT count(*) FROM source_versions v "
                "WHERE v.source_id = s.source_id) FROM sources s WHERE s.tenant_id = %s",
                (self.tenant,),
            ).fetchall()
        return {r[0]: (r[1], tuple(sorted(r[2])), int(r[3])) for r in rows}

    def filenames(self) -> set[str]:
        """The live sources' filenames, with the place their current version
        names (the fake locates an item by its key, its id)."""
        with self.platform.pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.filename, v.source_location ->> 'key' FROM sources s "
                "JOIN source_versions v ON v.version_id = s.current_version_id "
                "WHERE s.tenant_id = %s AND s.state = 'active'",
                (self.tenant,),
            ).fetchall()
        assert all(key == name for name, key in rows), rows
        return {r[0] for r in rows}


@pytest.fixture
def sync(platform: Platform, tenant_id: str) -> Sync:
    catalog = PostgresConnectorCatalog(platform.pool)
    instance = catalog.add_instance(
        ConnectorInstance(
            f"con_{uuid.uuid4().hex[:12]}",
            tenant_id,
            "fake",
            "docs",
            {},
            {},
            (f"tenant:{tenant_id}",),
        )
    )
    return Sync(platform, tenant_id, FakeConnector(page_size=2), instance, catalog)


def origin(sync: Sync, item_id: str) -> str:
    return f"connector:{sync.instance.instance_id}:{item_id}"


def test_a_pass_costs_what_changed(sync: Sync) -> None:
    for n in range(5):
        sync.connector.put(f"notes/{n}.txt", f"note number {n}".encode())
    first = sync.run()
    assert (first.seen, first.changed, first.reads, first.finished) == (5, 5, 5, True)
    assert len(sync.sources()) == 5
    sync.connector.fetches.clear()
    second = sync.run()
    assert (second.seen, second.changed, second.unchanged, second.reads) == (5, 0, 5, 0)
    assert sync.connector.fetches == []
    sync.connector.put("notes/2.txt", b"note number 2, revised")
    third = sync.run()
    assert (third.changed, third.reads) == (1, 1)
    assert sync.connector.fetches == ["notes/2.txt"]
    assert sync.sources()[origin(sync, "notes/2.txt")][2] == 2


def test_deletion_and_permission_changes_reach_the_catalog(sync: Sync) -> None:
    sync.connector.put("a.txt", b"alpha text")
    sync.connector.put("b.txt", b"beta text")
    sync.run()
    sync.connector.remove("a.txt")
    sync.connector.put("b.txt", b"beta text", subjects=("group:finance",))
    report = sync.run()
    assert (report.deleted, report.rescoped, report.reads) == (1, 1, 0)
    sources = sync.sources()
    assert sources[origin(sync, "a.txt")][0] == "deleting"
    assert sources[origin(sync, "b.txt")][1] == ("group:finance",)
    state = sync.catalog.state(sync.tenant, sync.instance.instance_id)
    assert state is not None and state.counts.deleted == 1 and state.items == 1


def test_a_renamed_item_keeps_its_source(sync: Sync) -> None:
    sync.connector.put("old/name.txt", b"the same bytes, moved")
    sync.connector.put("other.txt", b"something else")
    sync.run()
    sync.connector.remove("old/name.txt")
    sync.connector.put("new/name.txt", b"the same bytes, moved")
    report = sync.run()
    assert (report.moved, report.changed, report.deleted) == (1, 0, 0)
    assert len(sync.sources()) == 2, "no second source for the same bytes"
    items = {k.item_id: k for k in sync.catalog.known_items(sync.tenant, sync.instance.instance_id)}
    assert set(items) == {"new/name.txt", "other.txt"} and items["new/name.txt"].state == "ok"
    # a move forward in the listing's order (the old id made gone first), and
    # back: each time the source is named by where its bytes are now
    sync.connector.remove("new/name.txt")
    sync.connector.put("zz/name.txt", b"the same bytes, moved")
    assert sync.run().moved == 1
    assert sync.filenames() >= {"zz/name.txt"} and "new/name.txt" not in sync.filenames()
    sync.connector.remove("zz/name.txt")
    sync.connector.put("aa/name.txt", b"the same bytes, moved")
    assert sync.run().moved == 1
    assert sync.filenames() == {"aa/name.txt", "other.txt"}
    # a copy (the original still there) becomes a source of its own
    sync.connector.put("copy.txt", b"something else")
    copied = sync.run()
    assert (copied.changed, copied.moved) == (1, 0) and len(sync.sources()) == 3


def test_refusals_and_failures_stay_their_items(sync: Sync) -> None:
    sync.connector.put("big.txt", b"x" * 5000)
    sync.connector.put("tool.exe", b"MZ not a document")
    sync.connector.put("flaky.txt", b"flaky but fine")
    sync.connector.put("locked.txt", b"forbidden today")
    sync.connector.put("fine.txt", b"fine text")
    sync.connector.fetch_faults["flaky.txt"] = [
        ConnectorError("fake", "flaky.txt", "SlowDown", retry_after=1.5, retryable=True)
    ]
    sync.connector.fetch_faults["locked.txt"] = [
        ConnectorError("fake", "locked.txt", "403 AccessDenied")
    ]
    report = sync.run(max_item_bytes=1000)
    assert report.finished and report.changed == 2  # flaky (after its retry) and fine
    assert sync.pauses == [1.5], "the source's Retry-After is honoured"
    assert report.failed == 1 and any("AccessDenied" in e for e in report.errors)
    reasons = dict(r.split(": ", 1) for r in report.refused)
    assert reasons["big.txt"].startswith("too-large")
    assert reasons["tool.exe"].startswith("unsupported-type")
    state = sync.catalog.state(sync.tenant, sync.instance.instance_id)
    assert state is not None
    assert {i for i, _ in state.item_errors} == {"big.txt", "tool.exe", "locked.txt"}
    again = sync.run(max_item_bytes=1000)
    assert again.changed == 1 and again.reads == 1, "the failed item is retried, refusals not"


class CrashAfterFirstPage:
    kind = "fake"
    complete_listing = True
    sorted_listing = True  # as the fake it wraps
    lasting_locations = False

    def __init__(self, inner: FakeConnector) -> None:
        self.inner = inner

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        pages = self.inner.list_pages(cursor)
        yield next(pages)
        raise RuntimeError("the worker died")

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        return self.inner.fetch(item, known_version)


def test_a_crashed_pass_resumes_after_its_last_page(sync: Sync) -> None:
    for n in range(6):
        sync.connector.put(f"{n}.txt", f"document {n}".encode())
    with pytest.raises(RuntimeError):
        sync.run(CrashAfterFirstPage(sync.connector))
    assert len(sync.sources()) == 2
    sync.connector.fetches.clear()
    resumed = sync.run()
    assert resumed.resumed and resumed.finished
    assert sorted(sync.connector.fetches) == ["2.txt", "3.txt", "4.txt", "5.txt"]
    assert resumed.deleted == 0, "items seen before the crash are not taken as gone"
    assert len(sync.sources()) == 6


def test_an_unreadable_listing_stops_the_pass_open(sync: Sync) -> None:
    sync.connector.put("kept.txt", b"kept text")
    sync.run()
    sync.connector.listing_faults.append(ConnectorError("fake", None, "403 AccessDenied"))
    report = sync.run()
    assert not report.finished and report.deleted == 0, "a broken source is not an empty one"
    assert sync.sources()[origin(sync, "kept.txt")][0] == "active"
    state = sync.catalog.state(sync.tenant, sync.instance.instance_id)
    assert state is not None and state.counts.last_error == "403 AccessDenied"


class AskedIngest:
    """The tenant's ports with an ingest trigger that records what it was asked."""

    def __init__(self, view: object) -> None:
        self.view = view
        self.asked: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.view, name)

    def ingest_trigger(self) -> AskedIngest:
        return self

    def request_ingest(self, tenant_id: str) -> None:
        self.asked.append(tenant_id)


def test_ingest_is_asked_for_as_soon_as_a_page_registered_something(sync: Sync) -> None:
    for n in range(3):
        sync.connector.put(f"{n}.txt", f"document {n}".encode())
    ports = AskedIngest(sync.platform.for_tenant(sync.tenant))
    run_pass(ports, sync.catalog, sync.instance, sync.connector)  # type: ignore[arg-type]
    assert ports.asked == [sync.tenant, sync.tenant], "once per page that registered"
    ports.asked.clear()
    run_pass(ports, sync.catalog, sync.instance, sync.connector)  # type: ignore[arg-type]
    assert ports.asked == [], "an unchanged pass asks for nothing"
