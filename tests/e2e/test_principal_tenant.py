"""The key's lookup reads the caller's tenant with it.

Every search read the tenant's serving model and fusion constants in a walled
transaction of its own (BEGIN, the wall, the read, COMMIT: four round trips)
right after the key's lookup had read the key (three more). One statement reads
both, without a transaction: six round trips fewer per search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groundwork.catalog import Tenant
from groundwork.services import retrieval
from groundwork.services.retrieval import SearchQuery
from resources.platform import Platform


def test_the_principal_carries_its_tenant_as_read_with_the_key(
    platform: Platform, tenant_id: str
) -> None:
    _, secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "t")
    who = platform.catalog.principal_for_key(secret)
    assert who is not None and who.tenant == platform.catalog.get_tenant(tenant_id)
    assert platform.catalog.principal_for_key(secret + "x") is None


@dataclass
class _CountingCatalog:
    inner: Any
    tenant_reads: int = 0

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        self.tenant_reads += 1
        return self.inner.get_tenant(tenant_id)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Ports:
    def __init__(self, view: Platform, catalog: _CountingCatalog) -> None:
        self._view = view
        self.catalog = catalog

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)


def test_a_search_reads_the_tenant_once_with_the_key(platform: Platform, tenant_id: str) -> None:
    _, secret = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "t")
    who = platform.catalog.principal_for_key(secret)
    assert who is not None
    view = platform.for_tenant(tenant_id)
    counted = _CountingCatalog(view.catalog)
    result = retrieval.search(_Ports(view, counted), who, SearchQuery("vacation days"))  # type: ignore[arg-type]
    assert result.model == platform.settings.default_model_key
    assert counted.tenant_reads == 0
