"""An item registered by id rather than from a listing page — a failed fetch
retried by the next pass, a copy settled at the end of a pass — is stored
with the location its listing gave (connector_items.location, migration
0032), so its version is cited with it like any other. The fake connector
and the real catalog."""

from __future__ import annotations

import uuid

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.port import ConnectorError
from groundwork.services.connector_sync import PassReport, SyncSettings, run_pass
from resources.composition.platform import Platform
from resources.postgres.connectors import PostgresConnectorCatalog
from tests.fakes_connectors import FakeConnector


class Passes:
    def __init__(self, platform: Platform, tenant: str, connector: FakeConnector) -> None:
        self.platform = platform
        self.tenant = tenant
        self.connector = connector
        self.catalog = PostgresConnectorCatalog(platform.pool)
        self.instance = self.catalog.add_instance(
            ConnectorInstance(
                f"con_{uuid.uuid4().hex[:12]}",
                tenant,
                "fake",
                "docs",
                {},
                {},
                (f"tenant:{tenant}",),
            )
        )

    def run(self) -> PassReport:
        return run_pass(
            self.platform.for_tenant(self.tenant),
            self.catalog,
            self.instance,
            self.connector,
            SyncSettings(sleep=lambda _: None),
        )

    def locations(self) -> dict[str, dict[str, str]]:
        """item id -> the location on its source's current version"""
        prefix = f"connector:{self.instance.instance_id}:"
        with self.platform.pool.connection() as conn:
            rows = conn.execute(
                "SELECT s.origin, v.source_location FROM sources s "
                "JOIN source_versions v ON v.version_id = s.current_version_id "
                "WHERE s.tenant_id = %s AND s.origin LIKE %s",
                (self.tenant, prefix + "%"),
            ).fetchall()
        return {r[0].removeprefix(prefix): dict(r[1]) for r in rows}


def test_a_failed_item_retried_by_id_keeps_its_location(platform: Platform, tenant_id: str) -> None:
    connector = FakeConnector(complete_listing=False)
    connector.put("a.md", b"# A\n\nalpha\n")
    connector.fetch_faults["a.md"] = [ConnectorError("fake", "a.md", "reset by peer")]
    passes = Passes(platform, tenant_id, connector)

    assert passes.run().failed == 1
    assert passes.locations() == {}
    retried = passes.run()
    assert (retried.failed, retried.changed) == (0, 1)
    assert passes.locations() == {"a.md": {"key": "a.md"}}


def test_a_copy_settled_at_the_end_of_a_pass_keeps_its_location(
    platform: Platform, tenant_id: str
) -> None:
    connector = FakeConnector()
    connector.put("a.md", b"# A\n\nthe same bytes\n")
    passes = Passes(platform, tenant_id, connector)
    passes.run()

    connector.put("copy.md", b"# A\n\nthe same bytes\n")
    passes.run()
    assert passes.locations() == {"a.md": {"key": "a.md"}, "copy.md": {"key": "copy.md"}}
