"""Export one version of an artifact (never "the artifact": a version) to
any registered format (groundwork.render.renderers: Markdown, HTML, PDF,
DOCX, PPTX, XLSX). The record is unique per (tenant, artifact,
version, format): whoever claims it renders; everyone else waits for that
file. A failed render leaves the record `failed` with the reason and no file,
and a retry renders again."""

from __future__ import annotations

from typing import Any, Protocol

from groundwork.artifacts import (
    ArtifactVersion,
    NewFile,
    document_title,
    put_content,
    size_problem,
)
from groundwork.extract.markdown import markdown_blocks
from groundwork.ports import BlobStore
from groundwork.render import RenderedFile
from groundwork.render.fidelity import verify_rendering
from groundwork.render.renderers import Draft, renderer_for


class ExportStore(Protocol):
    def claim_export(
        self, tenant_id: str, artifact_id: str, generation: int, fmt: str
    ) -> tuple[dict[str, Any], bool]: ...

    def finish_export(
        self,
        export: dict[str, Any],
        file: NewFile | None,
        failure: str | None,
        unrenderable: tuple[str, ...] = (),
        receipt: dict[str, Any] | None = None,
    ) -> dict[str, Any]: ...

    def wait_export(self, export: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]: ...


def render_markdown(
    markdown: str, fmt: str, title: str
) -> tuple[RenderedFile, dict[str, Any] | None]:
    """(the file, the fidelity receipt for formats the extractors read back)."""
    adapter = renderer_for(fmt)
    blocks = markdown_blocks(markdown)
    rendered = adapter.render(Draft(title, markdown, blocks))
    if not adapter.read_back:
        return rendered, None
    receipt = verify_rendering(
        blocks,
        rendered.data,
        adapter.media_type,
        f"export{adapter.extension}",
        rendered.unrenderable,
    )
    return rendered, receipt.to_dict()


def export_version(
    store: ExportStore,
    blobs: BlobStore,
    tenant_id: str,
    artifact_id: str,
    version: ArtifactVersion,
    fmt: str,
    fallback_title: str,
) -> dict[str, Any]:
    """The title is the exported version's own first heading (`fallback_title`
    without one): the file is made once per version and format and served to
    every later caller, so nothing about the caller may shape it."""
    export, claimed = store.claim_export(tenant_id, artifact_id, version.generation, fmt)
    if not claimed:
        return store.wait_export(export) if export["state"] == "pending" else export
    try:
        markdown = blobs.get(version.blob_key).decode()
        rendered, receipt = render_markdown(markdown, fmt, document_title(markdown, fallback_title))
        if receipt is not None and not receipt["passed"]:
            return store.finish_export(
                export,
                None,
                f"fidelity check failed: {receipt['missing'][:5]}",
                rendered.unrenderable,
                receipt,
            )
        too_big = size_problem("export", len(rendered.data))
        if too_big:
            return store.finish_export(export, None, too_big, rendered.unrenderable, receipt)
        key, digest = put_content(blobs, rendered.data)  # the blob before the row that names it
        file = NewFile("export", fmt, rendered.media_type, key, digest, len(rendered.data))
        return store.finish_export(export, file, None, rendered.unrenderable, receipt)
    except Exception as exc:  # a render that fails leaves a reason, never a partial file
        return store.finish_export(export, None, f"{type(exc).__name__}: {exc}"[:500])
