"""Upload throughput and server memory for a 100 MB file through the API.

    uv run python bench/upload.py [--megabytes 100] [--part-megabytes 8] [--backend fs s3]

Both blob stores in one run by default: the filesystem folder and S3 (the
embedded SeaweedFS unless GROUNDWORK_S3_ENDPOINT names a store, bucket
groundwork-bench), each through a fresh API process.

Serves the API in its own process (uvicorn, loopback), creates an upload
session, sends the file in parts streamed from disk, completes it, and
prints MB/s for the transfer and for the whole session (including sniffing,
hashing and storing), plus the server's resident memory before and its peak
(VmHWM) after: the server must not hold the file in memory.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx  # noqa: E402

from resources.composition.platform import connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from testbed.api_server import peak_rss_mib, rss_mib, serve_api  # noqa: E402

DATABASE = "groundwork_bench"
PREFIX = "gwbench"
BUCKET = "groundwork-bench"


def _file_parts(path: Path, start: int, length: int, piece: int = 1024 * 1024) -> Iterator[bytes]:
    with path.open("rb") as handle:
        handle.seek(start)
        left = length
        while left > 0:
            data = handle.read(min(piece, left))
            if not data:
                return
            left -= len(data)
            yield data


def _run(args: argparse.Namespace, backend: str, settings: GroundworkSettings) -> dict[str, float]:
    """One upload through a fresh API process (its own peak RSS) storing into `backend`."""
    extra = {"GROUNDWORK_BLOB_BACKEND": "filesystem" if backend == "fs" else "s3"}
    if backend == "s3":
        extra["GROUNDWORK_S3_BUCKET"] = BUCKET
        settings = replace(settings, blob_backend="s3", s3_bucket=BUCKET)
    platform = connect(settings, ensure_engines(settings), database=DATABASE, index_prefix=PREFIX)
    tenant = f"upload-{uuid.uuid4().hex[:6]}"
    platform.catalog.ensure_tenant(tenant, tenant, settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "bench")
    headers = {"Authorization": f"Bearer {key}"}
    size = args.megabytes * 1024 * 1024
    part = args.part_megabytes * 1024 * 1024

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.txt"
        # unique bytes per run: content addressing would make a re-run a no-op
        line = f"Groundwork upload benchmark {uuid.uuid4().hex} with ordinary words.\n".encode()
        with path.open("wb") as handle:
            written = 0
            while written < size:
                chunk = (line * 16384)[: size - written]
                handle.write(chunk)
                written += len(chunk)
        pids: list[int] = []
        with serve_api(args.port, DATABASE, PREFIX, on_start=pids.append, extra_env=extra) as base:
            pid = pids[0]
            with httpx.Client(base_url=base, headers=headers, timeout=600) as http:
                http.get("/v1/files").raise_for_status()  # warm the request path
                before = rss_mib(pid)
                started = time.monotonic()
                created = http.post("/v1/uploads", json={"filename": "big.txt", "size": size})
                created.raise_for_status()
                upload = created.json()["upload_id"]
                offset = 0
                while offset < size:
                    length = min(part, size - offset)
                    sent = http.put(
                        f"/v1/uploads/{upload}",
                        params={"offset": offset},
                        content=_file_parts(path, offset, length),
                        headers={"Content-Length": str(length)},
                    )
                    sent.raise_for_status()
                    offset = sent.json()["received"]
                transferred = time.monotonic() - started
                done = http.post(f"/v1/uploads/{upload}/complete")
                done.raise_for_status()
                total = time.monotonic() - started
                peak = peak_rss_mib(pid)
    stored = [k for k in platform.blobs.list_keys()]
    platform.close()
    assert stored, "nothing was stored"
    megabytes = size / 1024 / 1024
    return {
        "transfer": megabytes / transferred,
        "total": megabytes / total,
        "seconds": total,
        "before": before,
        "peak": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--part-megabytes", type=int, default=8)
    parser.add_argument("--port", type=int, default=8097)
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=["fs", "s3"],
        default=["fs", "s3"],
        help="blob stores to measure, each through a fresh API process (default: both)",
    )
    args = parser.parse_args()
    settings = GroundworkSettings.from_env()
    results = {backend: _run(args, backend, settings) for backend in args.backend}
    print(f"upload of {args.megabytes} MiB in {args.part_megabytes} MiB parts over loopback")
    for backend, r in results.items():
        print(
            f"  {backend:>2}: transfer {r['transfer']:.1f} MiB/s; with completion (sniff, "
            f"sha256, store) {r['seconds']:.2f} s = {r['total']:.1f} MiB/s; API RSS "
            f"{r['before']:.0f} -> peak {r['peak']:.0f} MiB (+{r['peak'] - r['before']:.0f})"
        )
    if "fs" in results and "s3" in results:
        ratio = results["s3"]["total"] / results["fs"]["total"]
        growth = results["s3"]["peak"] - results["s3"]["before"]
        print(
            f"  s3/fs throughput with completion: {ratio:.0%} (goal >= 75%); "
            f"s3 RSS growth +{growth:.0f} MiB (goal <= 32)"
        )


if __name__ == "__main__":
    main()
