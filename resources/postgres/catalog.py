"""The Catalog port on PostgreSQL: one class assembled from parts, one
module per concern (resources/postgres/catalog_parts/), behind the same
Catalog protocol."""

from __future__ import annotations

from resources.postgres.catalog_parts.common import hash_secret
from resources.postgres.catalog_parts.lifecycle import Lifecycle
from resources.postgres.catalog_parts.processing import Processing
from resources.postgres.catalog_parts.reading import Reading
from resources.postgres.catalog_parts.registration import Registration
from resources.postgres.catalog_parts.tenants import TenantsAndKeys
from resources.postgres.catalog_parts.uploads import UploadsAndBlobs

__all__ = ["PostgresCatalog", "hash_secret"]


class PostgresCatalog(
    TenantsAndKeys, Registration, Processing, Reading, Lifecycle, UploadsAndBlobs
):
    """The catalog: tenants and keys, registration, stage progress, reading,
    lifecycle, uploads. Each part shares the pool it was built with."""
