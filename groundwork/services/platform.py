"""What the application layer needs from the platform: ports only.

The composition root (`resources.composition.platform.Platform`) satisfies this Protocol
structurally (mypy checks it where the transports hand it over), so services
and the tool dispatcher never import an adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from groundwork.artifact_exports import ExportStore
from groundwork.artifacts import ArtifactFile, ArtifactRecord, ArtifactStore
from groundwork.catalog import Catalog, TenantQuotas
from groundwork.citations import Citation
from groundwork.files import FileMetadataStore
from groundwork.lifecycle import Indexes
from groundwork.overview import OverviewLedger
from groundwork.ports import (
    AccessScope,
    BlobStore,
    EmbeddingProvider,
    IngestTrigger,
    MalwareScanner,
    VisionProvider,
)
from groundwork.retrieval.kernel import SearchEngines
from groundwork.retrieval.outcome import ChunkView
from groundwork.summaries import Summarizer
from groundwork.upload_staging import UploadStaging


class ReadingRecords(Protocol):
    """The catalog's reading side: chunk text behind the publication pointer,
    issued ids, citation snapshots and listings, each filtered by scope."""

    def load_chunks(
        self, scope: AccessScope, chunk_ids: Sequence[str], model_key: str | None = None
    ) -> dict[str, ChunkView]: ...

    def section(
        self, scope: AccessScope, chunk_id: str, model_key: str | None = None
    ) -> list[ChunkView]: ...

    def record_issued(self, key_id: str, chunk_ids: Sequence[str]) -> None: ...

    def record_citations(
        self,
        scope: AccessScope,
        key_id: str,
        citations: Sequence[Citation],
        issued_chunk_ids: Sequence[str] = (),
    ) -> list[str]:
        """Store citation snapshots and record `issued_chunk_ids` as issued to the
        key, atomically (one statement: this is on every search's path); return
        the citation ids in the caller's order."""
        ...

    def issued_recently(self, key_id: str, hours: int = 24, limit: int = 20) -> list[str]: ...

    def was_issued(self, key_id: str, chunk_id: str, hours: int = 24) -> bool: ...

    def browse(
        self, scope: AccessScope, media_type: str | None, after: str | None, limit: int
    ) -> list[dict[str, Any]]: ...

    def media_type_counts(self, scope: AccessScope) -> dict[str, int]: ...

    def first_chunks(
        self, scope: AccessScope, source_ids: Sequence[str], per_source: int = 5
    ) -> dict[str, list[ChunkView]]: ...

    def readable_version(
        self, tenant_id: str, source_id: str, version_id: str
    ) -> tuple[str, str, str] | None:
        """(blob key, filename, media type) of a stored version of a live source."""
        ...

    def citation(self, tenant_id: str, citation_id: str) -> dict[str, Any] | None: ...


class UploadSessions(Protocol):
    """Resumable upload sessions in the catalog: the acknowledged offset moves
    only by compare-and-set (`advance_upload`), so of two parts sent at the
    same offset exactly one is acknowledged."""

    def create_upload(
        self,
        scope: AccessScope,
        key_id: str,
        filename: str,
        size: int,
        declared_type: str,
        subjects: Sequence[str],
        target_source_id: str | None = None,
    ) -> str: ...

    def upload(self, tenant_id: str, upload_id: str) -> dict[str, Any] | None: ...

    def advance_upload(self, upload_id: str, expected_offset: int, new_offset: int) -> bool:
        """Move the acknowledged offset from `expected_offset` to `new_offset`;
        False if it moved meanwhile (a part sent twice, or out of order, loses)."""
        ...

    def cancel_upload(self, upload_id: str) -> bool:
        """Open -> cancelled; False when the session is no longer open (a
        completion won the race, or it was cancelled already)."""
        ...

    def finish_upload(
        self, upload_id: str, state: str, source_id: str | None, version_id: str | None
    ) -> None: ...


class ServiceCatalog(
    Catalog, OverviewLedger, ReadingRecords, UploadSessions, TenantQuotas, Protocol
):
    """Everything the services ask of the catalog."""


class ArtifactRecords(ArtifactStore, ExportStore, Protocol):
    def file(self, scope: AccessScope, file_id: str) -> ArtifactFile | None: ...

    def list_artifacts(
        self, scope: AccessScope, after: str | None, limit: int
    ) -> tuple[list[ArtifactRecord], str | None]:
        """A page of visible artifacts in id order, and the cursor after it (None: the last)."""
        ...


class PlatformPorts(Protocol):
    """The ports bundle a service call receives, already behind the caller's
    tenant wall (the transports build it with `for_tenant`)."""

    @property
    def catalog(self) -> ServiceCatalog: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def files(self) -> FileMetadataStore: ...

    @property
    def artifacts(self) -> ArtifactRecords: ...

    def serving_model(self, tenant_id: str) -> str: ...

    def indexes(self) -> Indexes:
        """Every store a chunk lives in (deletion and permission changes reach each)."""
        ...

    def search_engines(self, model_key: str) -> SearchEngines: ...

    def embedder(self, model_key: str) -> EmbeddingProvider: ...

    def scanner(self) -> MalwareScanner | None: ...

    def summarizer(self) -> Summarizer | None: ...

    def vision(self) -> VisionProvider: ...

    def sniff_media_type(self, data: bytes, filename: str) -> str: ...

    def approval_secret(self) -> bytes:
        """The server's key for signing approval tokens (never leaves the server)."""
        ...

    def reference_secret(self) -> bytes:
        """The server's key for signing file references (never leaves the server)."""
        ...

    def upload_staging(self) -> UploadStaging:
        """Where open upload sessions' bytes wait for completion."""
        ...

    def ingest_trigger(self) -> IngestTrigger:
        """Asks the orchestrator for the ingest run a new registration needs."""
        ...

    def sniff_file(self, path: Path | BinaryIO, filename: str) -> str:
        """The media type of a staged file (a path, or a seekable reader),
        read from its leading bytes and a ZIP's central directory."""
        ...

    def shared_transaction(self) -> AbstractContextManager[None]:
        """The block's catalog and index work, on the calling thread, in one
        database transaction: one checkout, one wall, one commit for a
        search's vector leg, re-check and citations instead of one each."""
        ...


class WalledPlatform(PlatformPorts, Protocol):
    """The whole platform: it builds a tenant's walled view (for a call whose
    tenant is known only from its credential, such as a signed reference)."""

    def for_tenant(self, tenant_id: str) -> PlatformPorts: ...
