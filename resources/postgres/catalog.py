"""The Catalog port on PostgreSQL: one class assembled from parts, one
module per concern (resources/postgres/catalog_parts/), behind the same
Catalog protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groundwork.catalog import (
    LifecycleLedger,
    RegistrationLedger,
    SourceReading,
    StageProgress,
    SummaryLedger,
    TenantDirectory,
)
from groundwork.overview import OverviewLedger
from groundwork.services.platform import ReadingRecords, ServiceCatalog
from groundwork.services.uploads import UploadSessions
from resources.postgres.catalog_parts.common import hash_secret
from resources.postgres.catalog_parts.lifecycle import Lifecycle
from resources.postgres.catalog_parts.overview import Overviews
from resources.postgres.catalog_parts.processing import Processing
from resources.postgres.catalog_parts.reading import Reading
from resources.postgres.catalog_parts.registration import Registration
from resources.postgres.catalog_parts.summaries import Summaries
from resources.postgres.catalog_parts.tenants import TenantsAndKeys
from resources.postgres.catalog_parts.uploads import UploadsAndBlobs
from resources.postgres.tenant_wall import ConnectionSource

__all__ = ["PostgresCatalog", "hash_secret"]


class PostgresCatalog(
    TenantsAndKeys,
    Registration,
    Processing,
    Summaries,
    Overviews,
    Reading,
    Lifecycle,
    UploadsAndBlobs,
):
    """The catalog: tenants and keys, registration, stage progress, the summary
    layer and overview pages, reading, lifecycle, uploads. Each part shares the pool
    it was built with."""


if TYPE_CHECKING:

    def _each_part_is_its_port(pool: ConnectionSource) -> None:
        """mypy proves each part satisfies the Protocol of its concern, and the
        assembled class the whole catalog the services ask for."""
        _tenants: TenantDirectory = TenantsAndKeys(pool)
        _registration: RegistrationLedger = Registration(pool)
        _stages: StageProgress = Processing(pool)
        _summaries: SummaryLedger = Summaries(pool)
        _overviews: OverviewLedger = Overviews(pool)
        _sources: SourceReading = Reading(pool)
        _records: ReadingRecords = Reading(pool)
        _lifecycle: LifecycleLedger = Lifecycle(pool)
        _sessions: UploadSessions = UploadsAndBlobs(pool)
        _whole: ServiceCatalog = PostgresCatalog(pool)
