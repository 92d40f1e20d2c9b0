"""Copying every blob of one store into another (a folder into a bucket),
so a platform can move its bytes without stopping.

Idempotent and resumable by construction: keys are content-addressed and a
store's put is all-or-nothing, so a key the target already holds was copied
whole, and a pass interrupted anywhere is finished by running it again (it
skips what is there). Each copy is streamed (never a whole file in memory)
and verified: the SHA-256 of the bytes read is compared with the key that
names them, and the target's own checks refuse bytes that differ. A key that
is not content-addressed is copied and counted, with nothing to verify it by.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from groundwork.errors import GroundworkError, StoreError
from groundwork.ports import BlobStore

_CONTENT_KEY = re.compile(r"^sha256/[0-9a-f]{2}/([0-9a-f]{64})$")


@dataclass(slots=True)
class MigrationReport:
    copied: int = 0
    skipped: int = 0  # already in the target
    bytes_copied: int = 0
    unverifiable: int = 0  # keys that do not name their content
    failed: dict[str, str] = field(default_factory=dict)  # key -> why

    @property
    def complete(self) -> bool:
        return not self.failed


def migrate_blobs(
    source: BlobStore,
    target: BlobStore,
    *,
    verify_existing: bool = False,
    on_key: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy every key of `source` that `target` lacks. `verify_existing`
    re-reads what the target already holds and checks its SHA-256 (a key
    found corrupt is copied again). `on_key(key, bytes)` is called per key
    handled (a progress bar). One key's failure is recorded and the pass
    goes on; run it again to retry."""
    report = MigrationReport()
    for key in source.list_keys():
        expected = _CONTENT_KEY.match(key)
        try:
            if target.exists(key) and (
                not verify_existing or expected is None or _digest(target, key) == expected.group(1)
            ):
                report.skipped += 1
                if on_key is not None:
                    on_key(key, 0)
                continue
            size = _copy(source, target, key, expected.group(1) if expected else None)
        except GroundworkError as exc:
            report.failed[key] = str(exc)
            continue
        report.copied += 1
        report.bytes_copied += size
        report.unverifiable += expected is None
        if on_key is not None:
            on_key(key, size)
    return report


def _copy(source: BlobStore, target: BlobStore, key: str, expected: str | None) -> int:
    digest = hashlib.sha256()
    size = 0

    def pieces() -> Iterator[bytes]:
        nonlocal size
        for piece in source.read_chunks(key):
            digest.update(piece)
            size += len(piece)
            yield piece
        if expected is not None and digest.hexdigest() != expected:
            # raised from inside the stream: the target stores nothing
            raise StoreError(f"the source's bytes for {key} are not the bytes it names")

    target.put_stream(key, pieces())
    return size


def _digest(store: BlobStore, key: str) -> str:
    digest = hashlib.sha256()
    for piece in store.read_chunks(key):
        digest.update(piece)
    return digest.hexdigest()
