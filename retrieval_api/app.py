"""FastAPI handlers: authenticate, validate, call the core, shape the response.

Every handler is synchronous on purpose (FastAPI runs it in a worker thread)
because the adapters use blocking drivers with their own pools.
"""

import logging
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from groundwork.documents import (
    FAILURE_GUIDANCE,
    ExtractedDocument,
    ExtractionFailure,
    FailureReason,
)
from groundwork.errors import (
    CapabilityUnavailable,
    EngineUnavailable,
    GroundworkError,
    InvalidRequest,
    NotFound,
)
from groundwork.inbox import MAX_FILE_BYTES
from groundwork.pipeline import register_file
from groundwork.ports import Principal, SearchFilters
from groundwork.reading import (
    MAX_WINDOW_BLOCKS,
    NothingToRead,
    extract_tables,
    fence_untrusted,
    read_document,
)
from groundwork.retrieval.kernel import SearchMode, SearchRequest, hybrid_search
from groundwork.retrieval.outcome import Found
from resources.platform import Platform
from resources.sniffing import sniff_media_type
from retrieval_api.schemas import (
    BlockOut,
    CitationOut,
    ErrorOut,
    HitOut,
    ReadOut,
    RegistrationOut,
    SearchBody,
    SearchResponse,
    TableOut,
    TablesOut,
    VersionStatusOut,
)

logger = logging.getLogger(__name__)

OUTCOME_MESSAGES = {
    "found": "Results found.",
    "nothing_accessible": "Nothing is visible to this API key; ask an administrator for access.",
    "nothing_matches": "No published passage matches the query; try other words.",
    "nothing_close_enough": "Some passages were related, but none closely enough to cite.",
}

MAX_UPLOAD_BYTES = MAX_FILE_BYTES
MAX_TABLES = 200


def _error(status: int, error: str, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "message": message})


def create_app(platform_factory: Callable[[], Platform]) -> FastAPI:
    app = FastAPI(
        title="Groundwork retrieval API",
        version="0.1.0",
        description="Hybrid (vector + keyword) search with citations, scoped by API key.",
        responses={401: {"model": ErrorOut}, 422: {"model": ErrorOut}, 503: {"model": ErrorOut}},
    )

    def platform() -> Platform:
        return platform_factory()

    def principal(
        authorization: Annotated[str | None, Header()] = None,
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> Principal:
        secret = x_api_key
        if authorization and authorization.lower().startswith("bearer "):
            secret = authorization[7:].strip()
        if not secret:
            raise _Unauthorized("send an API key as 'Authorization: Bearer <key>' or 'X-API-Key'")
        found = platform().catalog.principal_for_key(secret)
        if found is None:
            raise _Unauthorized("the API key is not valid or has been revoked")
        return found

    @app.exception_handler(_Unauthorized)
    def _unauthorized(_: Request, exc: _Unauthorized) -> JSONResponse:
        return _error(401, "unauthorized", str(exc))

    @app.exception_handler(RequestValidationError)
    def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg')}"
            for e in exc.errors()
        )
        return _error(422, "invalid_request", problems or "the request is not valid")

    @app.exception_handler(InvalidRequest)
    def _invalid_core(_: Request, exc: InvalidRequest) -> JSONResponse:
        return _error(422, "invalid_request", str(exc))

    @app.exception_handler(NotFound)
    def _not_found(_: Request, exc: NotFound) -> JSONResponse:
        return _error(404, "not_found", str(exc))

    @app.exception_handler(EngineUnavailable)
    def _unavailable(_: Request, exc: EngineUnavailable) -> JSONResponse:
        logger.warning("engine unavailable: %s", exc)
        return _error(503, "unavailable", "a storage engine is unavailable; retry shortly")

    @app.exception_handler(CapabilityUnavailable)
    def _capability(_: Request, exc: CapabilityUnavailable) -> JSONResponse:
        return _error(501, "capability_unavailable", str(exc))

    @app.exception_handler(GroundworkError)
    def _groundwork(_: Request, exc: GroundworkError) -> JSONResponse:
        logger.exception("request failed", exc_info=exc)
        return _error(500, "internal", "the request failed; the error has been logged")

    @app.exception_handler(Exception)
    def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error", exc_info=exc)
        return _error(500, "internal", "the request failed; the error has been logged")

    @app.get("/v1/health")
    def health() -> dict[str, str]:
        platform().catalog.list_tenants()
        return {"status": "ok"}

    @app.post("/v1/search", response_model=SearchResponse)
    def search(body: SearchBody, who: Annotated[Principal, Depends(principal)]) -> SearchResponse:
        p = platform()
        tenant = p.catalog.get_tenant(who.tenant_id)
        model_key = tenant.active_model if tenant else p.settings.default_model_key
        filters = None
        if body.filters is not None:
            filters = SearchFilters(
                source_ids=tuple(body.filters.source_ids)
                if body.filters.source_ids is not None
                else None,
                media_types=tuple(body.filters.media_types)
                if body.filters.media_types is not None
                else None,
            )
        request = SearchRequest(
            query=body.query,
            limit=body.limit,
            candidates=max(50, body.limit),
            mode=SearchMode(body.mode),
            filters=filters,
        )
        outcome = hybrid_search(who.scope, request, p.search_engines(model_key))
        hits: list[HitOut] = []
        if isinstance(outcome, Found):
            for hit in outcome.hits:
                hits.append(
                    HitOut(
                        rank=hit.rank,
                        score=hit.score,
                        leg_ranks=hit.leg_ranks,
                        chunk_id=hit.chunk.chunk_id,
                        source_id=hit.chunk.source_id,
                        title=hit.chunk.title,
                        filename=hit.chunk.filename,
                        media_type=hit.chunk.media_type,
                        heading_path=list(hit.chunk.heading_path),
                        text=hit.chunk.body,
                        citation=CitationOut(**hit.citation.to_dict()),  # type: ignore[arg-type]
                    )
                )
        return SearchResponse(
            outcome=outcome.kind,  # type: ignore[arg-type]
            message=OUTCOME_MESSAGES[outcome.kind],
            model=model_key,
            hits=hits,
        )

    @app.post("/v1/sources", response_model=RegistrationOut, status_code=201)
    async def register_source(
        request: Request,
        who: Annotated[Principal, Depends(principal)],
        filename: Annotated[str, Query(min_length=1, max_length=255)],
        subjects: Annotated[list[str] | None, Query(max_length=50)] = None,
    ) -> RegistrationOut | JSONResponse:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
            return _error(
                413,
                "too_large",
                f"the file is {declared} bytes; the limit is {MAX_UPLOAD_BYTES} bytes",
            )
        received = bytearray()
        async for part in request.stream():
            received.extend(part)
            if len(received) > MAX_UPLOAD_BYTES:
                return _error(
                    413, "too_large", f"the upload exceeded the limit of {MAX_UPLOAD_BYTES} bytes"
                )
        scope = tuple(subjects) if subjects else who.subjects
        if not set(scope) & set(who.subjects):
            return _error(
                422, "invalid_request", "subjects must include at least one of the caller's own"
            )
        data = bytes(received)
        media_type = sniff_media_type(data, filename)
        p = platform()
        registration = register_file(
            p.catalog,
            p.blobs,
            tenant_id=who.tenant_id,
            origin=f"api:{filename}",
            filename=filename,
            data=data,
            subjects=scope,
            media_type=media_type,
        )
        return RegistrationOut(
            source_id=registration.source_id,
            version_id=registration.version_id,
            created=registration.created,
            media_type=media_type,
        )

    @app.get("/v1/sources/{source_id}/status", response_model=VersionStatusOut)
    def source_status(
        source_id: str, who: Annotated[Principal, Depends(principal)]
    ) -> VersionStatusOut:
        p = platform()
        status = p.catalog.source_status(who.scope, source_id)
        if status is None:
            raise NotFound(f"no source {source_id} is visible to this key")
        reason = status["failure_reason"]
        return VersionStatusOut(
            **status,  # type: ignore[arg-type]
            failure_guidance=FAILURE_GUIDANCE[FailureReason(str(reason))] if reason else None,
        )

    @app.get("/v1/sources/{source_id}/read", response_model=ReadOut)
    def read_source(
        source_id: str,
        who: Annotated[Principal, Depends(principal)],
        start_block: Annotated[int, Query(ge=0)] = 0,
        max_blocks: Annotated[int, Query(ge=1, le=MAX_WINDOW_BLOCKS)] = MAX_WINDOW_BLOCKS,
    ) -> ReadOut:
        found = platform().catalog.current_extraction(who.scope, source_id)
        if found is None:
            raise NotFound(f"no source {source_id} is visible to this key")
        version_id, document = found
        result = read_document(document, start_block=start_block, max_blocks=max_blocks)
        if isinstance(result, NothingToRead):
            return ReadOut(
                source_id=source_id,
                version_id=version_id,
                outcome="nothing_to_read",
                reason=result.reason,
                guidance=result.guidance,
                retry_may_help=result.retry_may_help,
            )
        return ReadOut(
            source_id=source_id,
            version_id=version_id,
            outcome="window",
            start_block=result.start_block,
            next_block=result.next_block,
            total_blocks=result.total_blocks,
            low_confidence=result.low_confidence,
            oversized_table=result.oversized_table,
            warnings=list(result.warnings),
            blocks=[
                BlockOut(
                    index=result.start_block + i,
                    kind=b.kind.value,
                    text=b.text,
                    level=b.level,
                    location=b.location.to_dict(),
                    location_label=b.location.label(),
                    confidence=b.confidence,
                    table=[list(r) for r in b.table.rows] if b.table else None,
                )
                for i, b in enumerate(result.blocks)
            ],
            content=fence_untrusted(result.markdown(), source_id),
        )

    @app.get("/v1/sources/{source_id}/tables", response_model=TablesOut)
    def source_tables(source_id: str, who: Annotated[Principal, Depends(principal)]) -> TablesOut:
        found = platform().catalog.current_extraction(who.scope, source_id)
        if found is None:
            raise NotFound(f"no source {source_id} is visible to this key")
        version_id, document = found
        if not isinstance(document, ExtractedDocument):
            reason = (
                document.reason.value
                if isinstance(document, ExtractionFailure)
                else "not-extracted-yet"
            )
            return TablesOut(source_id=source_id, version_id=version_id, tables=[], reason=reason)
        return TablesOut(
            source_id=source_id,
            version_id=version_id,
            tables=[
                TableOut(
                    rows=[list(r) for r in t.table.rows],
                    header_rows=t.table.header_rows,
                    location=t.location.to_dict(),
                    location_label=t.location.label(),
                    heading_path=list(t.heading_path),
                )
                for t in extract_tables(document)[:MAX_TABLES]
            ],
        )

    return app


class _Unauthorized(Exception):
    pass
