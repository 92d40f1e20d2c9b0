"""The connector services' ports on a platform: its catalog and indexes,
and the connector catalog on its pool (behind the tenant's wall when the
platform is a tenant view)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from groundwork.catalog import Catalog
from groundwork.lifecycle import Indexes
from resources.postgres.connectors import PostgresConnectorCatalog

if TYPE_CHECKING:
    from resources.composition.platform import Platform


@dataclass(frozen=True)
class ConnectorPlatform:
    platform: Platform

    @property
    def catalog(self) -> Catalog:
        return self.platform.catalog

    def indexes(self) -> Indexes:
        return self.platform.indexes()

    def connector_catalog(self) -> PostgresConnectorCatalog:
        return PostgresConnectorCatalog(self.platform.pool)
