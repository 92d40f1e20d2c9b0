"""Connectors of the caller's tenant (admin scope): add, list, read, pause or
resume, remove. Each route is one call of groundwork.services.connectors;
secrets are references and are never returned."""

from fastapi import APIRouter

from groundwork.services import connectors
from retrieval_api.connector_schemas import (
    ConnectorBody,
    ConnectorListOut,
    ConnectorOut,
    ConnectorPauseBody,
    ConnectorRemovedOut,
)
from retrieval_api.deps import ConnectorPortsDep, PrincipalDep

router = APIRouter()


@router.post("/v1/connectors", response_model=ConnectorOut, status_code=201)
def add_connector(
    body: ConnectorBody, who: PrincipalDep, platform: ConnectorPortsDep
) -> ConnectorOut:
    request = connectors.ConnectorRequest(
        kind=body.kind,
        name=body.name,
        config=body.config,
        secret_refs=body.secrets,
        subjects=body.subjects,
        freshness_seconds=body.freshness_seconds,
        interval_seconds=body.interval_seconds,
    )
    view = connectors.add_connector(platform, who.tenant_id, request)
    return ConnectorOut.model_validate(view.to_dict())


@router.get("/v1/connectors", response_model=ConnectorListOut)
def list_connectors(who: PrincipalDep, platform: ConnectorPortsDep) -> ConnectorListOut:
    views = connectors.list_connectors(platform, who.tenant_id)
    return ConnectorListOut.model_validate({"connectors": [v.to_dict() for v in views]})


@router.get("/v1/connectors/{name}", response_model=ConnectorOut)
def read_connector(name: str, who: PrincipalDep, platform: ConnectorPortsDep) -> ConnectorOut:
    return ConnectorOut.model_validate(
        connectors.connector(platform, who.tenant_id, name).to_dict()
    )


@router.put("/v1/connectors/{name}/paused", response_model=ConnectorOut)
def pause_connector(
    name: str, body: ConnectorPauseBody, who: PrincipalDep, platform: ConnectorPortsDep
) -> ConnectorOut:
    view = connectors.pause_connector(platform, who.tenant_id, name, body.paused)
    return ConnectorOut.model_validate(view.to_dict())


@router.delete("/v1/connectors/{name}", response_model=ConnectorRemovedOut)
def remove_connector(
    name: str, who: PrincipalDep, platform: ConnectorPortsDep
) -> ConnectorRemovedOut:
    removed = connectors.remove_connector(platform, who.tenant_id, name)
    return ConnectorRemovedOut(name=name, deleted_documents=removed)
