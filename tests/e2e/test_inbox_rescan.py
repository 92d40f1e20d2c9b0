"""A rescan reads only what changed ("Operable: quiet when idle"): the hourly
rescan read and hashed every inbox file to find nothing changed. Unchanged
files are recognised by their listed version (size, mtime, inode) kept as the
inbox connector's item; a same-size, same-mtime edit, which the version
cannot see, is found by the verification read each file gets once its item
is older than the verification interval. Real PostgreSQL catalog and blob
store; the file reads are counted, not replaced."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from groundwork.connectors.port import FetchResult, SourceItem
from groundwork.services.inbox_sync import VERIFY_AFTER_SECONDS, SyncReport
from resources.composition.platform import Platform
from resources.connectors.fsspec_files import FsspecConnector
from tests.e2e.helpers import inbox_pass, write_inbox


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The inbox files read (by name): the fetches of the real fsspec
    connector that returned bytes."""
    seen: list[str] = []
    original = FsspecConnector.fetch

    def counted(self: FsspecConnector, item: SourceItem, known: str | None) -> FetchResult:
        result = original(self, item, known)
        if result.stream is not None:
            seen.append(item.item_id.rsplit("/", 1)[-1])
        return result

    monkeypatch.setattr(FsspecConnector, "fetch", counted)
    return seen


def _sync(platform: Platform, tenant: str) -> SyncReport:
    return inbox_pass(platform, tenant)


def _age_files(folder: Path, seconds: float) -> None:
    """As if every file under `folder` was last written `seconds` ago."""
    for path in folder.rglob("*"):
        if path.is_file():
            mtime = path.stat().st_mtime_ns - int(seconds * 1e9)
            os.utime(path, ns=(mtime, mtime))


def _age_last_reads(platform: Platform, tenant: str, hours: float) -> None:
    """As if the tenant's files were last read `hours` ago."""
    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE connector_items SET updated_at = updated_at - make_interval(secs => %s) "
            "WHERE tenant_id = %s",
            (hours * 3600, tenant),
        )


def test_a_rescan_reads_no_unchanged_file_and_verification_finds_a_hidden_edit(
    platform: Platform, reads: list[str]
) -> None:
    tenant = f"rs-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    write_inbox(
        platform.settings.inbox_dir,
        tenant,
        {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbravo\n", "sub/c.md": "# C\n\ncharlie\n"},
    )
    _age_files(platform.settings.inbox_dir / tenant, seconds=60)
    first = _sync(platform, tenant)
    assert (first.created, sorted(reads)) == (3, ["a.md", "b.md", "c.md"])

    reads.clear()
    again = _sync(platform, tenant)
    assert (again.created, again.unchanged, reads) == (0, 3, [])

    # a touched file is read again (and found unchanged); the others are not
    b = platform.settings.inbox_dir / tenant / "b.md"
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 10_000_000_000))
    reads.clear()
    touched = _sync(platform, tenant)
    assert (touched.created, reads) == (0, ["b.md"])

    # same size, same mtime, same inode, other bytes: invisible to the signature
    a = platform.settings.inbox_dir / tenant / "a.md"
    before = a.stat()
    with a.open("r+b") as handle:  # in place: the inode stays
        handle.write(b"# Z")
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (a.stat().st_size, a.stat().st_mtime_ns, a.stat().st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    reads.clear()
    hidden = _sync(platform, tenant)
    assert (hidden.created, reads) == (0, [])

    # the verification read: once a file's last read is older than the interval
    _age_last_reads(platform, tenant, VERIFY_AFTER_SECONDS / 3600 + 1)
    reads.clear()
    verified = _sync(platform, tenant)
    assert (verified.created, sorted(reads)) == (1, ["a.md", "b.md", "c.md"])
    assert platform.catalog.counts(tenant).versions == 4
    reads.clear()
    assert _sync(platform, tenant).created == 0 and reads == []


def test_a_replaced_file_with_the_old_size_and_mtime_is_read(
    platform: Platform, reads: list[str]
) -> None:
    """A copy tool that preserves mtime writes a new file and renames it over
    the old one: a new inode, so it is read at once."""
    tenant = f"rs-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\nalpha\n"})
    _age_files(platform.settings.inbox_dir / tenant, seconds=60)
    _sync(platform, tenant)
    a = platform.settings.inbox_dir / tenant / "a.md"
    before = a.stat()
    replacement = a.with_name(".a.md.partial")
    replacement.write_text("# A\n\nomega\n")
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    replacement.rename(a)
    assert a.stat().st_ino != before.st_ino
    reads.clear()
    assert _sync(platform, tenant).created == 1 and reads == ["a.md"]


def test_a_file_written_moments_before_its_read_is_read_again(
    platform: Platform, reads: list[str]
) -> None:
    """Timestamps are coarse (a few ms here, seconds on some mounts): a file
    rewritten with the same size right after it was read can keep its mtime.
    As in git's "racy" rule, a signature taken within the racy window of the
    file's mtime is not trusted; the next rescan reads the file again."""
    tenant = f"rs-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    write_inbox(platform.settings.inbox_dir, tenant, {"a.md": "# A\n\nalpha\n"})
    assert _sync(platform, tenant).created == 1
    a = platform.settings.inbox_dir / tenant / "a.md"
    mtime = a.stat().st_mtime_ns
    a.write_text("# A\n\nomega\n")  # same size, same inode
    os.utime(a, ns=(mtime, mtime))  # and, as a coarse clock would, the same mtime
    reads.clear()
    assert _sync(platform, tenant).created == 1 and reads == ["a.md"]
    _age_files(platform.settings.inbox_dir / tenant, seconds=60)
    _sync(platform, tenant)  # read once more: now old enough to be trusted
    reads.clear()
    assert _sync(platform, tenant).created == 0 and reads == []
