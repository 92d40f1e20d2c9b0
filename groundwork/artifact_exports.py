"""Export one version of an artifact (never "the artifact": a version) to
Markdown, HTML, PDF or DOCX. The record is unique per (tenant, artifact,
version, format): whoever claims it renders; everyone else waits for that
file. A failed render leaves the record `failed` with the reason and no file,
and a retry renders again."""

from __future__ import annotations

from typing import Any, Protocol

from groundwork.artifacts import ArtifactVersion, NewFile, document_title, put_content
from groundwork.extract.markdown import markdown_blocks
from groundwork.ports import BlobStore
from groundwork.render import EXTENSIONS, MEDIA_TYPES, ExportFormat, RenderedFile
from groundwork.render.docx import render_docx
from groundwork.render.fidelity import verify_rendering
from groundwork.render.html import render_html
from groundwork.render.pdf import FIXED_CREATION_DATE, render_pdf


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
    markdown: str, fmt: ExportFormat, title: str
) -> tuple[RenderedFile, dict[str, Any] | None]:
    """(the file, the fidelity receipt for formats read back by a parser)."""
    blocks = markdown_blocks(markdown)
    if fmt == ExportFormat.MARKDOWN:
        return RenderedFile(markdown.encode(), fmt), None
    if fmt == ExportFormat.HTML:
        return RenderedFile(render_html(title, blocks), fmt), None
    if fmt == ExportFormat.PDF:
        data, missing = render_pdf(title, blocks)
        rendered = RenderedFile(data, fmt, missing)
    else:
        rendered = RenderedFile(render_docx(title, blocks, FIXED_CREATION_DATE), fmt)
    receipt = verify_rendering(
        blocks, rendered.data, MEDIA_TYPES[fmt], f"export{EXTENSIONS[fmt]}", rendered.unrenderable
    )
    return rendered, receipt.to_dict()


def export_version(
    store: ExportStore,
    blobs: BlobStore,
    tenant_id: str,
    artifact_id: str,
    version: ArtifactVersion,
    fmt: ExportFormat,
    fallback_title: str,
) -> dict[str, Any]:
    """The title is the exported version's own first heading (`fallback_title`
    without one): the file is made once per version and format and served to
    every later caller, so nothing about the caller may shape it."""
    export, claimed = store.claim_export(tenant_id, artifact_id, version.generation, fmt.value)
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
        key, digest = put_content(blobs, rendered.data)  # the blob before the row that names it
        file = NewFile("export", fmt.value, rendered.media_type, key, digest, len(rendered.data))
        return store.finish_export(export, file, None, rendered.unrenderable, receipt)
    except Exception as exc:  # a render that fails leaves a reason, never a partial file
        return store.finish_export(export, None, f"{type(exc).__name__}: {exc}"[:500])
