"""One handler per tool in groundwork.tools.registry. Each takes the ports
(behind the caller's tenant wall) and the authenticated principal, and returns
a dict matching the tool's output schema or a ToolRefusal. Handlers call the
same services the HTTP routes call, so both transports behave the same; every
field carrying file text is named `untrusted_*` and fenced."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groundwork.artifact_edits import edit_from_dict
from groundwork.artifacts import Provenance, provenance_from
from groundwork.attachments import bounded_filename, format_size
from groundwork.errors import NotFound
from groundwork.ports import Principal, SearchFilters
from groundwork.reading import (
    NothingToRead,
    fence_untrusted,
)
from groundwork.services import artifacts as artifact_service
from groundwork.services import attachments, documents, drilldown, retrieval, sources, turns
from groundwork.services.platform import PlatformPorts
from groundwork.tools.registry import LIST_CAP, READ_FILE_MAX_BYTES
from groundwork.tools.spec import ToolRefusal

Result = dict[str, Any] | ToolRefusal
Handler = Callable[[PlatformPorts, Principal, dict[str, Any]], Result]
HANDLERS: dict[str, Handler] = {}


def handler(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


@handler("list_files")
def list_files(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    limit = min(int(args.get("limit", LIST_CAP)), LIST_CAP)
    page, _ = sources.list_files(platform, who, args.get("cursor") or None, limit)
    files = [
        {
            "file_id": f.source_id,
            "version_id": f.version_id,
            "version_no": f.version_no,
            "filename": f.filename,
            "media_type": f.sniffed_type,
            "size_bytes": f.size_bytes,
            "state": f.state,
            "processing_state": f.processing_state,
            "low_confidence": f.low_confidence,
            "is_current": f.is_current,
            "document_type": f.document_type,
            **({"artifact_id": f.artifact_id} if f.artifact_id else {}),
        }
        for f in page.files
    ]
    result: dict[str, Any] = {
        "files": files,
        "truncated": page.next_cursor is not None,
        "next_cursor": page.next_cursor or "",
    }
    if page.next_cursor:
        result["how_to_continue"] = (
            f"call list_files with cursor={page.next_cursor!r} for the next {LIST_CAP}"
        )
    return result


@handler("read_file")
def read_file(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    window = sources.read_text(
        platform,
        who,
        file_id,
        offset=int(args.get("offset", 0)),
        max_bytes=int(args.get("max_bytes", READ_FILE_MAX_BYTES)),
        limit=READ_FILE_MAX_BYTES,
    )
    return {
        "file_id": file_id,
        "version_id": window.version_id,
        "offset": window.offset,
        "next_offset": window.next_offset,
        "eof": window.next_offset >= window.total_bytes,
        "total_bytes": window.total_bytes,
        "clamped": window.clamped,
        "untrusted_content": window.text,
    }


@handler("search_files")
def search_files(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    media_type = str(args["media_type"]) if args.get("media_type") else None
    # the schema's enum has checked each value; none given (or an empty list): both
    document_types = tuple(args.get("document_types") or ()) or None
    filters = (
        SearchFilters(
            media_types=(media_type,) if media_type else None, document_types=document_types
        )
        if media_type or document_types
        else None
    )
    result = retrieval.search(
        platform,
        who,
        retrieval.SearchQuery(
            query=str(args["query"]),
            limit=int(args.get("limit", 10)),
            filters=filters,
            layer=str(args.get("layer") or "raw"),
            cursor=str(args.get("cursor") or "") or None,
        ),
    )
    out: dict[str, Any] = {
        "outcome": result.outcome,
        "message": result.message,
        "turn_id": result.turn_id,
        # what ran in a lesser form (a remote reranker down: ranked locally)
        "degraded": list(result.degraded),
        # layer auto: the layer the router chose and why
        "route": result.route.to_dict() if result.route is not None else None,
        "hits": [
            {
                "citation_id": issued.citation_id,
                "rank": issued.hit.rank,
                "chunk_id": issued.hit.chunk.chunk_id,
                "file_id": issued.hit.chunk.source_id,
                "title": issued.hit.chunk.title,
                "filename": issued.hit.chunk.filename,
                "media_type": issued.hit.chunk.media_type,
                "location": issued.hit.citation.location.label(),
                "citation": issued.hit.citation.to_response(),
                "untrusted_text": fence_untrusted(
                    issued.hit.chunk.body, issued.hit.chunk.source_id
                ),
                "layer": issued.hit.chunk.layer,
                # a summary hit: the raw chunk ids it points at, for get_chunks
                "pointers": list(issued.pointers),
                "summary_kind": issued.summary_kind,
                # tenant: the caller's own documents; system: the shared system corpus
                "corpus": issued.hit.chunk.corpus,
            }
            for issued in result.hits
        ],
    }
    if result.browse is not None:
        out["browse"] = {
            "counts_by_type": result.browse.counts_by_type,
            "files": [
                {
                    "file_id": r["source_id"],
                    "title": r["title"],
                    "filename": r["filename"],
                    "media_type": r["media_type"],
                    "processing_state": r["processing_state"],
                }
                for r in result.browse.sources
            ],
            "next_cursor": result.browse.next_cursor or "",
        }
    return out


@handler("scan_document")
def scan_document(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    reading = sources.read(
        platform,
        who,
        file_id,
        start_block=int(args.get("start_block", 0)),
        max_blocks=int(args.get("max_blocks", 50)),
    )
    version_id, window = reading.version_id, reading.result
    if isinstance(window, NothingToRead):
        return ToolRefusal(
            window.reason, window.guidance, "call get_file_processing_status or start_block=0"
        )
    return {
        "file_id": file_id,
        "version_id": version_id,
        "blocks": [
            {
                "index": window.start_block + n,
                "kind": b.kind.value,
                "untrusted_text": b.text,
                "location": b.location.label(),
                **(
                    {"untrusted_table_rows": [list(r) for r in b.table.rows]}
                    if b.table is not None
                    else {}
                ),
                **({"confidence": b.confidence} if b.confidence is not None else {}),
            }
            for n, b in enumerate(window.blocks)
        ],
        "next_block": window.next_block if window.next_block is not None else -1,
        "total_blocks": window.total_blocks,
        "low_confidence": window.low_confidence,
    }


@handler("analyze_image")
def analyze_image(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    analysis = sources.analyze_image(platform, who, file_id)
    result: dict[str, Any] = {
        "file_id": file_id,
        "version_id": analysis.version_id,
        "ocr_lines": [
            {"untrusted_text": line.text, "confidence": line.confidence, "location": line.location}
            for line in analysis.lines
        ],
        "mean_confidence": analysis.mean_confidence,
        "description_status": analysis.description_status,
    }
    if analysis.description is not None:
        result["description"] = analysis.description
    return result


@handler("extract_text")
def extract_text(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    window = sources.extract_text(platform, who, file_id, int(args.get("start_char", 0)))
    return {
        "file_id": file_id,
        "version_id": window.version_id,
        "untrusted_content": window.text,
        "next_char": window.next_char if window.next_char is not None else -1,
        "total_chars": window.total_chars,
    }


@handler("extract_tables")
def extract_tables_tool(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    window = sources.tables_window(
        platform, who, file_id, int(args.get("start_table", 0)), LIST_CAP
    )
    return {
        "file_id": file_id,
        "version_id": window.version_id,
        "tables": [
            {
                "index": window.start + n,
                "number": t.number,
                "location": t.location.label(),
                "headings": list(t.heading_path),
                "header_rows": t.table.header_rows,
                # parallel to the rows: 0 for a header row, else the data row's
                # number as citations count it ("table 2 · rows 41–60")
                "row_numbers": list(t.row_numbers()),
                "untrusted_rows": [list(r) for r in t.table.rows],
            }
            for n, t in enumerate(window.tables)
        ],
        "next_table": window.next_table if window.next_table is not None else -1,
    }


@handler("summarize_document")
def summarize_document(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    file_id = str(args["file_id"])
    summary = retrieval.summarize_file(platform, who, file_id)
    return {
        "file_id": file_id,
        "method": summary.kind,
        "untrusted_summary": fence_untrusted(summary.summary, file_id),
        "chunk_ids": list(summary.pointers),
    }


@handler("compare_documents")
def compare_documents(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    return sources.compare(
        platform,
        who,
        (str(args["file_id_a"]), args.get("version_a")),
        (str(args["file_id_b"]), args.get("version_b")),
    )


def _provenance(args: dict[str, Any]) -> Provenance:
    raw = args["provenance"]
    return provenance_from(
        raw["tool"], raw["run"], raw.get("inputs", ""), raw.get("derived_from", [])
    )


@handler("create_artifact")
def create_artifact_tool(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    made = artifact_service.create(
        platform,
        who,
        path=str(args["path"]),
        markdown=str(args["markdown"]),
        provenance=_provenance(args),
        fmt=str(args.get("format") or "markdown"),
    )
    return {
        "artifact_id": made.record.artifact_id,
        "file_id": made.record.source_id,
        "generation": made.record.generation,
        "indexing": made.indexing.to_dict(),
    }


@handler("update_artifact")
def update_artifact(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    """Proposes; never approves: a destructive proposal comes back as
    approval-required with a proposal_token that a user holding
    artifacts:approve exchanges for the approval_token (a separate call)."""
    try:
        edits = [edit_from_dict(dict(e)) for e in args["edits"]]
    except (TypeError, ValueError) as exc:
        return ToolRefusal(
            "invalid", f"an edit is malformed: {exc}", "give each edit the fields its op needs"
        )
    try:
        outcome = artifact_service.revise(
            platform,
            who,
            str(args["artifact_id"]),
            expected_generation=int(args["expected_generation"]),
            provenance=_provenance(args),
            edits=edits,
            approval_token=args.get("approval_token"),
        )
    except NotFound:
        return ToolRefusal(
            "not_found", f"no artifact {args['artifact_id']} is visible to you", "create_artifact"
        )
    return {
        "artifact_id": outcome.artifact_id,
        "generation": outcome.generation,
        "summary": list(outcome.summary),
        **({"indexing": outcome.indexing.to_dict()} if outcome.indexing else {}),
    }


def _export_out(exported: artifact_service.Export) -> dict[str, Any]:
    result: dict[str, Any] = {
        "export_id": exported.export_id,
        "state": exported.state,
        "unrenderable": list(exported.unrenderable),
    }
    if exported.file is not None:
        result["artifact_file_id"] = exported.file.file_id
    if exported.failure_reason:
        result["failure_reason"] = exported.failure_reason
    return result


@handler("export_artifact")
def export_artifact(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    return _export_out(
        artifact_service.export(
            platform,
            who,
            str(args["artifact_id"]),
            int(args["generation"]),
            str(args["format"]),
        )
    )


@handler("create_pdf")
def create_pdf(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    made, exported = artifact_service.create_pdf(
        platform,
        who,
        path=str(args["path"]),
        markdown=str(args["markdown"]),
        provenance=_provenance(args),
    )
    assert exported.file is not None  # the service refuses a failed render
    return {
        "artifact_id": made.record.artifact_id,
        "generation": made.record.generation,
        "artifact_file_id": exported.file.file_id,
        "unrenderable": list(exported.unrenderable),
    }


@handler("convert_file")
def convert_file(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    # the registration policy's refusals (exists, type, scan) come back as they are
    converted = documents.convert_file(
        platform,
        who,
        documents.InputFile(source_id=str(args["file_id"])),
        str(args["target"]),
        str(args["filename"]) if args.get("filename") else None,
    )
    return {
        "file_id": converted.registered.source_id,
        "version_id": converted.registered.version_id,
        "media_type": converted.registered.media_type,
        "unrenderable": list(converted.unrenderable),
    }


@handler("get_file_processing_status")
def get_file_processing_status(
    platform: PlatformPorts, who: Principal, args: dict[str, Any]
) -> Result:
    status = sources.status(platform, who, str(args["file_id"]))
    result: dict[str, Any] = {
        "file_id": status.source_id,
        "version_id": status.version_id,
        "processing_state": status.processing_state,
        "low_confidence": status.low_confidence,
        "searchable": status.published,
    }
    if status.failure_reason:
        result["failure_reason"] = status.failure_reason
        result["guidance"] = status.failure_guidance or ""
    return result


@handler("get_summaries")
def get_summaries(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
    found, files = attachments.summaries_with_files(
        platform, who, str(args.get("query", "")), int(args.get("limit", 10))
    )
    return {
        "overview": found.overview,
        "overview_page": found.page.presented() if found.page else None,
        "files": [
            {
                "file_id": f.file_id,
                "filename": bounded_filename(f.filename),
                "media_type": f.media_type,
                "size": format_size(f.size_bytes),
                "size_bytes": f.size_bytes,
            }
            for f in files.files
        ],
        "more_files": files.more,
        "untrusted_files": files.render(),
        "turn_id": found.turn_id,
        "summaries": [
            {
                "source_id": s.source_id,
                "title": s.title,
                "media_type": s.media_type,
                "kind": s.kind,
                "untrusted_summary": fence_untrusted(s.summary, s.source_id),
                "chunk_ids": list(s.pointers),
            }
            for s in found.summaries
        ],
    }


def get_chunks(ledger: turns.TurnLedger) -> Handler:
    def run(platform: PlatformPorts, who: Principal, args: dict[str, Any]) -> Result:
        read = drilldown.read_chunks(
            platform,
            ledger,
            who,
            [str(c) for c in args["chunk_ids"]],
            str(args.get("turn_id") or "") or None,
        )
        chunks = [
            {
                "chunk_id": view.chunk_id,
                "source_id": view.source_id,
                "version_id": view.version_id,
                "title": view.title,
                "heading_path": list(view.heading_path),
                "location": view.location.to_dict(),
                "location_label": view.location.label(),
                "low_confidence": view.low_confidence,
                "untrusted_content": fence_untrusted(view.body, view.source_id),
                "parent_id": view.parent_id,  # its section ("" for a summary page's)
            }
            for view in read.chunks
        ]
        return {
            "chunks": chunks,
            "unknown_ids": list(read.unknown),
            "calls_left_this_turn": read.calls_left,
        }

    return run
