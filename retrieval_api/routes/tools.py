"""The tools over HTTP, with the same schemas as over MCP:
GET /v1/tools lists them; POST /v1/tools/{name} calls one with its arguments
as the JSON body. A refusal is an error status with error, message and the
alternative to try."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from groundwork.tools.dispatch import ToolDispatcher
from retrieval_api.deps import PrincipalDep, tool_dispatcher
from retrieval_api.errors import REFUSAL_STATUS

router = APIRouter()


def _dispatcher(request: Request) -> ToolDispatcher:
    return tool_dispatcher(request)


@router.get("/v1/tools")
def list_tools(request: Request, who: PrincipalDep) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "description": s.description,
            "input_schema": s.input_schema,
            "output_schema": s.output_schema,
            "risk": s.risk,
            "scope": s.scope,
        }
        for s in _dispatcher(request).specs
    ]


@router.post("/v1/tools/{name}", response_model=None)
def call_tool(
    name: str,
    request: Request,
    who: PrincipalDep,
    arguments: Annotated[dict[str, Any] | None, Body()] = None,
) -> dict[str, Any] | JSONResponse:
    result = _dispatcher(request).call(who, name, arguments)
    if result.ok:
        return result.payload
    return JSONResponse(
        status_code=REFUSAL_STATUS.get(result.payload["error"], 400), content=result.payload
    )
