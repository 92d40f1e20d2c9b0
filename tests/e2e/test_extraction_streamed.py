"""Extraction reads a large object streamed: a 200 MiB PDF in the bucket is
spooled to a local file in pieces (the pipeline's process never holds it),
and the extraction worker reads it there, within its usual memory bound."""

from __future__ import annotations

import os
import tracemalloc
import uuid
from pathlib import Path

import psycopg

from groundwork.documents import ExtractionLimits
from groundwork.stages.extraction import extract_pending
from groundwork.stages.registration import IncomingFile, register_path
from groundwork.upload_policy import MAX_UPLOAD_BYTES
from resources.composition.platform import Platform
from resources.engines.extraction_worker import (
    AT_CEILING_SHARE,
    DEFAULT_MEMORY_LIMIT,
    ExtractionWorker,
)

MIB = 1024 * 1024
#: the upload ceiling (groundwork/upload_policy.py), not extraction's default 50 MB
LIMITS = ExtractionLimits(max_bytes=MAX_UPLOAD_BYTES)


def _big_pdf(path: Path, marker: str, padding: int) -> None:
    """A one-page text PDF carrying an unreferenced stream of `padding` bytes
    (a scan's worth of size the page does not draw), written in pieces."""
    text = f"BT /F1 18 Tf 72 720 Td (Streamed extraction {marker}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    offsets: list[int] = []
    with path.open("wb") as out:
        out.write(b"%PDF-1.7\n")
        for number, body in enumerate(objects, start=1):
            offsets.append(out.tell())
            out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
        offsets.append(out.tell())
        out.write(b"6 0 obj\n<< /Length %d >>\nstream\n" % padding)
        piece = os.urandom(MIB)
        for _ in range(padding // MIB):
            out.write(piece)
        out.write(b"\nendstream\nendobj\n")
        xref = out.tell()
        out.write(b"xref\n0 7\n0000000000 65535 f \n")
        for offset in offsets:
            out.write(b"%010d 00000 n \n" % offset)
        out.write(b"trailer\n<< /Size 7 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)


def _vm_hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _tenant(platform: Platform) -> str:
    tenant = f"big-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    return tenant


def test_a_200_mib_pdf_in_the_bucket_is_extracted_streamed(
    s3_platform: Platform, tmp_path: Path
) -> None:
    platform = s3_platform
    tenant = _tenant(platform)
    marker = uuid.uuid4().hex[:10]
    path = tmp_path / "scan.pdf"
    _big_pdf(path, marker, 200 * MIB)
    incoming = IncomingFile(
        tenant_id=tenant,
        origin=f"api:{marker}.pdf",
        filename=f"{marker}.pdf",
        subjects=(f"tenant:{tenant}",),
        media_type="application/pdf",
    )
    register_path(platform.catalog, platform.blobs, incoming, path)
    path.unlink()
    worker = ExtractionWorker()
    worker.start()
    try:
        tracemalloc.start()
        try:
            report = extract_pending(
                platform.catalog, platform.blobs, tenant, limits=LIMITS, extractors=(worker,)
            )
            _, held = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert worker._process is not None
        worker_peak = _vm_hwm(worker._process.pid)
    finally:
        worker._kill()
    print(f"pipeline process held {held / MIB:.1f} MiB; worker peak {worker_peak / MIB:.0f} MiB")
    assert (report.processed, report.failed) == (1, 0), report.failures
    # the pipeline's process held pieces, never the object (before: 200 MiB
    # read whole, and pickled again for the worker)
    assert held < 32 * MIB, f"the pipeline's process held {held / MIB:.0f} MiB"
    # the worker reads the spooled file: the object once, far from its ceiling
    assert worker_peak < DEFAULT_MEMORY_LIMIT * AT_CEILING_SHARE, worker_peak / MIB
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        stored = conn.execute(
            "SELECT document::text FROM extracted_documents WHERE tenant_id = %s", (tenant,)
        ).fetchall()
    assert len(stored) == 1 and marker in stored[0][0]
