"""Export one version of an artifact (never "the artifact": a version) to
any registered format (groundwork.render.renderers: Markdown, HTML, PDF,
DOCX, PPTX, XLSX). The record is unique per (tenant, artifact,
version, format): whoever claims it renders; everyone else waits for that
file. A failed render leaves the record `failed` with the reason and no file,
and a retry renders again. The render signs a receipt for the file it made
(groundwork.artifact_receipts) and the save that attaches the file
(`attach_export`) checks it: a file no valid receipt vouches for is never
attached, the export fails with the refusal's name, and its blob goes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from groundwork.artifact_receipts import (
    ReceiptRefused,
    check_receipt,
    new_receipt,
    sign_receipt,
)
from groundwork.artifact_roles import BlobPurges, discard_staged
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
from groundwork.stages.registration import blob_key_for


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


class ExportRecords(ExportStore, BlobPurges, Protocol):
    """The export rows and the blob references (an unattached file's blob goes)."""


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
    store: ExportRecords,
    blobs: BlobStore,
    tenant_id: str,
    artifact_id: str,
    version: ArtifactVersion,
    fmt: str,
    fallback_title: str,
    *,
    secret: bytes,
    now: datetime,
) -> dict[str, Any]:
    """The title is the exported version's own first heading (`fallback_title`
    without one): the file is made once per version and format and served to
    every later caller, so nothing about the caller may shape it. `secret`
    signs and checks the receipt."""
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
        signed = sign_receipt(
            secret,
            new_receipt(
                tenant_id,
                artifact_id,
                version.generation,
                fmt,
                version.sha256,
                digest,
                file.size_bytes,
                now,
            ),
        )
        return attach_export(
            store,
            blobs,
            export,
            version,
            file,
            signed,
            secret=secret,
            now=now,
            fidelity=receipt,
            unrenderable=rendered.unrenderable,
        )
    except Exception as exc:  # a render that fails leaves a reason, never a partial file
        return store.finish_export(export, None, f"{type(exc).__name__}: {exc}"[:500])


def attach_export(
    store: ExportRecords,
    blobs: BlobStore,
    export: dict[str, Any],
    version: ArtifactVersion,
    file: NewFile,
    signed_receipt: str,
    *,
    secret: bytes,
    now: datetime,
    fidelity: dict[str, Any] | None = None,
    unrenderable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The save that attaches a rendered file to its (claimed, pending)
    export: only when `signed_receipt` vouches for this export's version
    (audience), format (adapter) and content (the version's hash, the file's
    hash and size, the file's content address) and has not expired. A refusal
    fails the export with the refusal's name (a retry renders again) and
    removes the file's blob unless another row names it. The answer's
    `receipt` is the fidelity receipt (formats read back) with the signed
    claims beside it."""
    expected = new_receipt(
        export["tenant_id"],
        export["artifact_id"],
        export["generation"],
        export["format"],
        version.sha256,
        file.sha256,
        file.size_bytes,
        now,
    )
    try:
        if file.blob_key != blob_key_for(file.sha256):
            raise ReceiptRefused("hash-mismatch", "the file's key is not its content's address")
        checked = check_receipt(secret, signed_receipt, expected, now)
    except ReceiptRefused as refused:
        discard_staged(store, blobs, export["tenant_id"], "", None, [file])
        return store.finish_export(export, None, str(refused), unrenderable, fidelity)
    claims = {
        "adapter": checked.adapter,
        "audience": checked.audience,
        "source_sha256": checked.source_sha256,
        "sha256": checked.file_sha256,
        "size_bytes": checked.size_bytes,
        "expires_at": checked.expires_at.isoformat(),
        "signed": signed_receipt,
    }
    return store.finish_export(export, file, None, unrenderable, {**(fidelity or {}), **claims})
