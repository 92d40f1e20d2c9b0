"""Deletions known page by page (issue #34): a sorted listing names the id
range each page covers, so a known item missing from its range is
unsearchable at that page, not after the whole listing; a move to a later id
in the same pass takes the source over (nothing extracted again); a resumed
pass finishes what its crashed run made gone; ids compare in byte order,
whatever the database's collation. A listing that is not sorted keeps the
end-of-listing rule."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from groundwork.services.connector_sync import PassReport, run_pass
from groundwork.stages.extraction import extract_pending
from resources.composition.platform import Platform
from resources.postgres.connectors import PostgresConnectorCatalog
from tests.e2e.helpers import publish_registered
from tests.e2e.test_connector_sync import CrashAfterFirstPage
from tests.fakes_connectors import FakeConnector


class WatchedCatalog(PostgresConnectorCatalog):
    """Runs `watch` each time a page's cursor is stored: the moment a page is done."""

    def __init__(self, platform: Platform) -> None:
        super().__init__(platform.pool)
        self.seen_at_cursor: list[tuple[str | None, bool]] = []
        self.marker: str | None = None
        self.platform = platform
        self.tenant = ""

    def save_cursor(self, tenant_id: str, instance_id: str, cursor: str | None) -> None:
        if self.marker is not None:
            self.seen_at_cursor.append((cursor, found(self.platform, tenant_id, self.marker)))
        super().save_cursor(tenant_id, instance_id, cursor)


def found(platform: Platform, tenant_id: str, marker: str) -> bool:
    outcome = hybrid_search(
        AccessScope(tenant_id, (f"tenant:{tenant_id}",)),
        SearchRequest(marker, mode=SearchMode.KEYWORD, limit=5),
        platform.search_engines(platform.settings.default_model_key),
    )
    return isinstance(outcome, Found) and any(marker in h.chunk.body for h in outcome.hits)


def note(name: str) -> bytes:
    return f"# {name}\n\nThe note called {name}; its marker is mk{name.split('.')[0]}q.\n".encode()


@pytest.fixture
def catalog(platform: Platform) -> WatchedCatalog:
    return WatchedCatalog(platform)


def instance_of(catalog: PostgresConnectorCatalog, tenant_id: str) -> ConnectorInstance:
    return catalog.add_instance(
        ConnectorInstance(
            f"con_{uuid.uuid4().hex[:12]}",
            tenant_id,
            "fake",
            "notes",
            {},
            {},
            (f"tenant:{tenant_id}",),
        )
    )


def synced(
    platform: Platform,
    catalog: WatchedCatalog,
    tenant_id: str,
    connector: FakeConnector,
    names: Sequence[str],
) -> ConnectorInstance:
    for name in names:
        connector.put(name, note(name))
    instance = instance_of(catalog, tenant_id)
    run_pass(platform.for_tenant(tenant_id), catalog, instance, connector)
    publish_registered(platform, tenant_id)
    return instance


def again(
    platform: Platform,
    catalog: WatchedCatalog,
    instance: ConnectorInstance,
    connector: object,
) -> PassReport:
    return run_pass(platform.for_tenant(instance.tenant_id), catalog, instance, connector)  # type: ignore[arg-type]


def source_states(platform: Platform, tenant_id: str) -> dict[str, str]:
    with platform.pool.connection() as conn:
        rows = conn.execute(
            "SELECT origin, state FROM sources WHERE tenant_id = %s", (tenant_id,)
        ).fetchall()
    return {r[0].rsplit(":", 1)[-1]: r[1] for r in rows}


NAMES = ["a.md", "b.md", "c.md", "d.md", "e.md", "f.md"]  # three pages of two


def test_a_deletion_is_unsearchable_at_its_page(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    connector = FakeConnector(page_size=2)
    instance = synced(platform, catalog, tenant_id, connector, NAMES)
    assert found(platform, tenant_id, "mkbq")
    connector.remove("b.md")
    catalog.marker = "mkbq"
    report = again(platform, catalog, instance, connector)
    assert report.finished and report.deleted == 1 and report.reads == 0
    first_page, *later = catalog.seen_at_cursor
    assert first_page == ("c.md", False), "unsearchable once its page is done, 2 pages to go"
    assert later and not any(s for _, s in later)
    assert source_states(platform, tenant_id)["b.md"] == "deleting"
    known = {k.item_id for k in catalog.known_items(tenant_id, instance.instance_id)}
    assert known == set(NAMES) - {"b.md"}


def test_a_listing_that_is_not_sorted_learns_deletions_at_its_end(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    connector = FakeConnector(page_size=2, sorted_listing=False)
    instance = synced(platform, catalog, tenant_id, connector, NAMES)
    connector.remove("b.md")
    catalog.marker = "mkbq"
    report = again(platform, catalog, instance, connector)
    assert report.deleted == 1
    assert [s for _, s in catalog.seen_at_cursor] == [True, True, True]
    assert not found(platform, tenant_id, "mkbq")


def test_a_move_to_a_later_id_keeps_its_source_and_is_not_extracted_again(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    connector = FakeConnector(page_size=2)
    instance = synced(platform, catalog, tenant_id, connector, NAMES)
    data = connector.items.pop("a.md")
    connector.items["z.md"] = data  # page 1 lacks a.md; z.md comes on the last page
    catalog.marker = "mkaq"
    report = again(platform, catalog, instance, connector)
    assert (report.moved, report.changed, report.deleted) == (1, 0, 0)
    assert catalog.seen_at_cursor[0] == ("c.md", False), "gone at its page"
    assert found(platform, tenant_id, "mkaq"), "shown again under its new id, with no ingest"
    states = source_states(platform, tenant_id)
    assert len(states) == len(NAMES) and states["a.md"] == "active", "the same source"
    assert extract_pending(platform.catalog, platform.blobs, tenant_id).processed == 0
    items = {k.item_id: k for k in catalog.known_items(tenant_id, instance.instance_id)}
    assert "a.md" not in items and items["z.md"].state == "ok"
    # and it stays: the next pass sees nothing to do
    quiet = again(platform, catalog, instance, connector)
    assert (quiet.moved, quiet.deleted, quiet.changed, quiet.reads) == (0, 0, 0, 0)


def test_a_move_to_an_earlier_id_keeps_its_source(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    connector = FakeConnector(page_size=2)
    instance = synced(platform, catalog, tenant_id, connector, NAMES)
    data = connector.items.pop("f.md")
    connector.items["0.md"] = data
    report = again(platform, catalog, instance, connector)
    assert (report.moved, report.changed, report.deleted) == (1, 0, 0)
    assert found(platform, tenant_id, "mkfq")
    assert len(source_states(platform, tenant_id)) == len(NAMES)
    assert extract_pending(platform.catalog, platform.blobs, tenant_id).processed == 0


def test_a_resumed_pass_finishes_the_deletions_of_its_crashed_run(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    connector = FakeConnector(page_size=2)
    instance = synced(platform, catalog, tenant_id, connector, NAMES)
    connector.remove("a.md")
    connector.remove("e.md")
    with pytest.raises(RuntimeError):
        again(platform, catalog, instance, CrashAfterFirstPage(connector))
    assert not found(platform, tenant_id, "mkaq"), "gone at its page, before the crash"
    resumed = again(platform, catalog, instance, connector)
    assert resumed.resumed and resumed.finished and resumed.deleted == 2
    states = source_states(platform, tenant_id)
    assert states["a.md"] == "deleting" and states["e.md"] == "deleting"
    assert not found(platform, tenant_id, "mkeq")


def test_ids_compare_in_byte_order(
    platform: Platform, catalog: WatchedCatalog, tenant_id: str
) -> None:
    """Byte order puts 'B.md' before 'a.md'; a linguistic collation puts it
    after, which would make page 2's range claim 'B.md', listed on page 1."""
    connector = FakeConnector(page_size=2)
    instance = synced(platform, catalog, tenant_id, connector, ["B.md", "a.md", "b.md", "é.md"])
    report = again(platform, catalog, instance, connector)
    assert (report.deleted, report.changed, report.seen) == (0, 0, 4)
    assert set(source_states(platform, tenant_id).values()) == {"active"}
