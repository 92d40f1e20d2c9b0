"""The files a model's context lists, by reference (groundwork.attachments):
the same list on /v1/context, /v1/summaries and the get_summaries tool, so
every transport hands a model the same constant-cost view of what exists."""

from __future__ import annotations

from groundwork.attachments import ATTACHMENT_CAP, FileReference, FileReferences, references
from groundwork.catalog import Tenant
from groundwork.ports import Principal
from groundwork.services import retrieval
from groundwork.services.platform import PlatformPorts


def file_references(
    ports: PlatformPorts, who: Principal, cap: int = ATTACHMENT_CAP
) -> FileReferences:
    """The caller's newest current files (one page, cap + 1 asked so the list
    knows more exist); a file's bytes are never read."""
    page = ports.files.list_files(who.scope, None, cap + 1)
    current = [
        FileReference(f.source_id, f.filename, f.sniffed_type, f.size_bytes)
        for f in page.files
        if f.is_current and f.state == "stored"
    ]
    listed = references(current, cap)
    if page.next_cursor is not None and not listed.more:
        return FileReferences(listed.files, more=True)
    return listed


def context_with_files(
    ports: PlatformPorts,
    who: Principal,
    query: retrieval.SearchQuery,
    budget_tokens: int,
    per_source_cap: int,
    expand_sections: bool,
    tenant: Tenant | None = None,
) -> tuple[retrieval.ContextResult, FileReferences]:
    """Budgeted context, and the files beside it by reference (outside the budget:
    their cost is fixed per file and capped, whatever the files hold)."""
    found = retrieval.context(
        ports, who, query, budget_tokens, per_source_cap, expand_sections, tenant
    )
    return found, file_references(ports, who)


def summaries_with_files(
    ports: PlatformPorts, who: Principal, query: str, limit: int
) -> tuple[retrieval.SummariesResult, FileReferences]:
    """The first layer of layered retrieval, and the files beside it by reference."""
    return retrieval.summaries(ports, who, query, limit), file_references(ports, who)
