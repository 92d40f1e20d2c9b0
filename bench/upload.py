"""Upload throughput and server memory for a 100 MB file through the API.

    uv run python bench/upload.py [--megabytes 100] [--part-megabytes 8]

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
from pathlib import Path

import httpx  # noqa: E402

from resources.composition.platform import connect, ensure_engines  # noqa: E402
from resources.composition.settings import GroundworkSettings  # noqa: E402
from testbed.api_server import peak_rss_mib, rss_mib, serve_api  # noqa: E402

DATABASE = "groundwork_bench"
PREFIX = "gwbench"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--part-megabytes", type=int, default=8)
    parser.add_argument("--port", type=int, default=8097)
    args = parser.parse_args()

    settings = GroundworkSettings.from_env()
    platform = connect(settings, ensure_engines(settings), database=DATABASE, index_prefix=PREFIX)
    tenant = f"upload-{uuid.uuid4().hex[:6]}"
    platform.catalog.ensure_tenant(tenant, tenant, settings.default_model_key)
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "bench")
    headers = {"Authorization": f"Bearer {key}"}
    size = args.megabytes * 1024 * 1024
    part = args.part_megabytes * 1024 * 1024

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.txt"
        line = b"Groundwork upload benchmark line with some ordinary words in it.\n"
        with path.open("wb") as handle:
            written = 0
            while written < size:
                chunk = (line * 16384)[: size - written]
                handle.write(chunk)
                written += len(chunk)
        pids: list[int] = []
        with serve_api(args.port, DATABASE, PREFIX, on_start=pids.append) as base:
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
    megabytes = size / 1024 / 1024
    print(f"upload of {megabytes:.0f} MiB in {args.part_megabytes} MiB parts over loopback")
    print(f"  transfer: {transferred:.2f} s = {megabytes / transferred:.1f} MiB/s")
    print(
        f"  with completion (sniff, sha256, store): {total:.2f} s = {megabytes / total:.1f} MiB/s"
    )
    print(
        f"  server RSS before: {before:.0f} MiB, peak during: {peak:.0f} MiB "
        f"(+{peak - before:.0f} MiB for a {megabytes:.0f} MiB file)"
    )
    platform.close()


if __name__ == "__main__":
    main()
