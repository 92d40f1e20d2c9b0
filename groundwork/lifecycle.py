"""Deletion, permission changes and tenant erasure across every store.

Order is the design:
- Deletion marks the source `deleting` (search stops returning it at once:
  the result-time re-check reads the catalog) and unpublishes it in both
  indexes; a sweep later purges index records, chunks and unshared bytes, and
  writes a tombstone per removed item per store. The source row stays, so
  citations keep naming their source. Bytes go before rows: an object that
  cannot be deleted (the store unreachable) is tried again a few times, then
  reported, and its source stays marked, so the next sweep retries it; the
  sweep goes on with the other sources (one file's problem is that file's).
- A permission change updates the catalog first (re-checks follow it at once),
  then the denormalized subjects in both indexes.
- Erasing a tenant removes everything it owns in every store; bytes shared
  with another tenant (content-addressed) stay.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from groundwork.catalog import Catalog
from groundwork.errors import GroundworkError, NotFound
from groundwork.ports import BlobStore, KeywordIndex, VectorIndex
from groundwork.upload_staging import UploadStaging


@dataclass(frozen=True, slots=True)
class Indexes:
    keywords: KeywordIndex
    vectors: tuple[VectorIndex, ...]


#: tries of one object delete within a sweep, and the pauses between them
#: (a store restarting answers again within a second or two; longer outages
#: are the next sweep's)
DELETE_TRIES = 3
DELETE_PAUSES = (0.2, 1.0)


@dataclass(frozen=True, slots=True)
class BlobDeleteFailure:
    """An object the sweep could not delete: its source stays marked for deletion."""

    tenant_id: str
    source_id: str
    blob_key: str
    reason: str


@dataclass(slots=True)
class PurgeReport:
    sources: int = 0
    chunks: int = 0
    blobs: int = 0
    seconds: float = 0.0
    failures: list[BlobDeleteFailure] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TombstoneProof:
    tombstoned: int
    leftovers: dict[str, tuple[str, ...]] = field(
        default_factory=dict
    )  # store -> chunk ids still present

    @property
    def clean(self) -> bool:
        return not any(self.leftovers.values())


def request_deletion(catalog: Catalog, indexes: Indexes, tenant_id: str, source_id: str) -> None:
    if not catalog.mark_source_deleting(tenant_id, source_id):
        raise NotFound(f"no live source {source_id}")
    indexes.keywords.set_live(tenant_id, source_id, None, False)
    for vectors in indexes.vectors:
        vectors.set_live(tenant_id, source_id, None, False)


def purge_deleted(
    catalog: Catalog,
    indexes: Indexes,
    blobs: BlobStore,
    tenant_id: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> PurgeReport:
    report = PurgeReport()
    started = time.monotonic()
    for tenant, source_id in catalog.sources_marked_for_deletion(tenant_id):
        chunk_ids: list[str] = catalog.source_chunk_ids(source_id)
        tombstones: list[tuple[str, str]] = [(c, "catalog") for c in chunk_ids]
        indexes.keywords.delete_source(tenant, source_id)
        tombstones += [(c, "keyword") for c in chunk_ids]
        for vectors in indexes.vectors:
            vectors.delete_source(tenant, source_id)
            tombstones += [(c, f"vector:{vectors.model.key}") for c in chunk_ids]
        failed = False
        for key in catalog.blob_keys_only_used_by(source_id):
            reason = _delete_blob(blobs, key, sleep)
            if reason is not None:
                report.failures.append(BlobDeleteFailure(tenant, source_id, key, reason))
                failed = True
                continue
            tombstones.append((key, "blob"))
            report.blobs += 1
        if failed:
            continue  # rows stay: the source is still marked, the next sweep retries
        catalog.finish_deletion(tenant, source_id, tombstones)
        report.sources += 1
        report.chunks += len(chunk_ids)
    report.seconds = time.monotonic() - started
    return report


def _delete_blob(blobs: BlobStore, key: str, sleep: Callable[[float], None]) -> str | None:
    """None once the object is gone; else why the last try failed."""
    reason = ""
    for attempt in range(DELETE_TRIES):
        try:
            blobs.delete(key)
            return None
        except GroundworkError as exc:
            reason = str(exc)
        if attempt < len(DELETE_PAUSES):
            sleep(DELETE_PAUSES[attempt])
    return reason


def prove_tombstones(catalog: Catalog, indexes: Indexes, tenant_id: str) -> TombstoneProof:
    dead: set[str] = catalog.tombstoned_chunk_ids(tenant_id)
    leftovers = {
        "keyword": tuple(sorted(dead & indexes.keywords.chunk_ids(tenant_id, live_only=False)))
    }
    for vectors in indexes.vectors:
        leftovers[f"vector:{vectors.model.key}"] = tuple(
            sorted(dead & vectors.chunk_ids(tenant_id, live_only=False))
        )
    return TombstoneProof(tombstoned=len(dead), leftovers=leftovers)


def change_subjects(
    catalog: Catalog, indexes: Indexes, tenant_id: str, source_id: str, subjects: Sequence[str]
) -> None:
    if not subjects:
        raise ValueError("a source needs at least one subject; delete it instead")
    if not catalog.set_source_subjects(tenant_id, source_id, subjects):
        raise NotFound(f"no live source {source_id}")
    indexes.keywords.set_subjects(tenant_id, source_id, subjects)
    for vectors in indexes.vectors:
        vectors.set_subjects(tenant_id, source_id, subjects)


def erase_tenant(
    catalog: Catalog,
    indexes: Indexes,
    blobs: BlobStore,
    tenant_id: str,
    inbox_root: Path | None = None,
    staging: UploadStaging | None = None,
) -> dict[str, int]:
    """Every copy goes: index rows, bytes, catalog rows, the bytes of upload
    sessions never completed (`staging`: in a bucket, aborted multipart
    uploads), and the tenant's inbox folder (the originals it was fed from;
    left behind, the next rescan would ingest them again and bring the tenant
    back)."""
    removed = {"keyword": indexes.keywords.delete_tenant(tenant_id)}
    for vectors in indexes.vectors:
        removed[f"vector:{vectors.model.key}"] = vectors.delete_tenant(tenant_id)
    keys = catalog.tenant_blob_keys(tenant_id)
    for key in keys:
        blobs.delete(key)
    removed["blob"] = len(keys)
    if staging is not None:
        removed["staged_uploads"] = staging.discard_tenant(tenant_id)
    catalog.erase_tenant_rows(tenant_id)
    if inbox_root is not None:
        folder = inbox_root / tenant_id
        if folder.is_dir() and folder.resolve().parent == inbox_root.resolve():
            removed["inbox_files"] = sum(1 for p in folder.rglob("*") if p.is_file())
            shutil.rmtree(folder)
    return removed


def change_tags(
    catalog: Catalog, indexes: Indexes, tenant_id: str, source_id: str, tags: Sequence[str]
) -> None:
    if not catalog.set_source_tags(tenant_id, source_id, tags):
        raise NotFound(f"no live source {source_id}")
    clean = sorted(set(tags))
    indexes.keywords.set_tags(tenant_id, source_id, clean)
    for vectors in indexes.vectors:
        vectors.set_tags(tenant_id, source_id, clean)
