"""Run by test_crash_windows in a subprocess: registers one file and SIGKILLs
itself at the named step of the write order (pending row -> bytes -> stored),
or in the middle of the bytes (`during-bytes`: 20 MiB, killed after the first
S3 part, or before a folder's temp file is renamed into place)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from groundwork.stages.registration import register_file
from resources.composition.platform import connect
from resources.composition.settings import GroundworkSettings


class _DieAfter:
    def __init__(self, inner: object, method: str) -> None:
        self._inner = inner
        self._method = method

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._inner, name)
        if name != self._method:
            return attribute

        def wrapped(*args: object, **kwargs: object) -> object:
            result = attribute(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
            return result

        return wrapped


def during_bytes_payload(seed: str) -> str:
    """20 MiB of text from the seed: more than two S3 parts."""
    return (seed + "\n") * (20 * 1024 * 1024 // (len(seed) + 1) + 1)


def main() -> None:
    step, database, tenant, payload = sys.argv[1:5]
    platform = connect(GroundworkSettings.from_env(), database=database)
    catalog: object = platform.catalog
    blobs: object = platform.blobs
    if step == "after-pending-row":
        catalog = _DieAfter(platform.catalog, "begin_version")
    elif step == "after-bytes":
        blobs = _DieAfter(platform.blobs, "put")
    elif step == "during-bytes":
        payload = during_bytes_payload(payload)
        store: Any = platform.blobs
        if hasattr(store, "_client"):  # S3: die once the first part is stored
            store._client = _DieAfter(store._client, "upload_part")
        else:  # a folder: die with the temp file written, before its rename
            os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
    register_file(
        catalog,  # type: ignore[arg-type]
        blobs,  # type: ignore[arg-type]
        tenant_id=tenant,
        origin=f"api:{step}.txt",
        filename=f"{step}.txt",
        data=payload.encode(),
        subjects=[f"tenant:{tenant}"],
        media_type="text/plain",
    )


if __name__ == "__main__":
    main()
