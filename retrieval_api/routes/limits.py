"""A tenant's rate limits and quotas: the caller's own (GET /v1/limits) and,
for an operator's key (platform:admin), any tenant's, read and set
(/v1/admin/tenants/{tenant_id}/limits); and whether a tenant reads the shared
system corpus (/v1/admin/tenants/{tenant_id}/system-corpus, the same operator
scope). Each route is one call of groundwork.services.limits or tenant_wall."""

from fastapi import APIRouter

from groundwork.services import limits, tenant_wall
from retrieval_api.deps import PlatformDep, PrincipalDep, WholePlatformDep
from retrieval_api.schemas import LimitsBody, LimitsOut, SystemCorpusBody, SystemCorpusOut

router = APIRouter()


@router.get("/v1/limits", response_model=LimitsOut)
def own_limits(who: PrincipalDep, platform: PlatformDep) -> LimitsOut:
    return LimitsOut.model_validate(limits.tenant_limits(platform, who.tenant_id).to_dict())


@router.get("/v1/admin/tenants/{tenant_id}/limits", response_model=LimitsOut)
def tenant_limits(tenant_id: str, platform: WholePlatformDep) -> LimitsOut:
    return LimitsOut.model_validate(limits.tenant_limits(platform, tenant_id).to_dict())


@router.put("/v1/admin/tenants/{tenant_id}/limits", response_model=LimitsOut)
def set_tenant_limits(tenant_id: str, body: LimitsBody, platform: WholePlatformDep) -> LimitsOut:
    """Fields left out keep their values; null clears a limit."""
    changed = limits.change_limits(platform, tenant_id, body.model_dump(exclude_unset=True))
    return LimitsOut.model_validate(changed.to_dict())


@router.get("/v1/admin/tenants/{tenant_id}/system-corpus", response_model=SystemCorpusOut)
def system_corpus(tenant_id: str, platform: WholePlatformDep) -> SystemCorpusOut:
    enabled = tenant_wall.system_corpus_enabled(platform, tenant_id)
    return SystemCorpusOut(tenant_id=tenant_id, enabled=enabled)


@router.put("/v1/admin/tenants/{tenant_id}/system-corpus", response_model=SystemCorpusOut)
def set_system_corpus(
    tenant_id: str, body: SystemCorpusBody, platform: WholePlatformDep
) -> SystemCorpusOut:
    """Holds from the tenant's next request: each request reads the switch."""
    enabled = tenant_wall.set_system_corpus(platform, tenant_id, body.enabled)
    return SystemCorpusOut(tenant_id=tenant_id, enabled=enabled)
