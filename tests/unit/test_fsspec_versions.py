"""The fsspec connector's version of a listed entry (entry_version): the
ETag when there is one, else size and mtime (and inode), and never a trusted
version for an mtime too recent to tell an edit from the last read."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groundwork.connectors.port import ConnectorError
from resources.connectors.fsspec_files import RACY_WINDOW_SECONDS, FsspecConnector, entry_version

NOW = 1_796_000_000.0


def test_an_etag_is_the_version() -> None:
    assert entry_version({"ETag": '"abc"', "mtime": NOW - 60}, NOW) == "etag:abc"
    assert entry_version({"ETag": '"abc"'}, NOW) == "etag:abc"  # no time given: trusted


def test_an_etag_listed_within_the_window_of_its_mtime_is_racy() -> None:
    """WsgiDAV's ETag is inode, whole-second mtime and size: a same-size edit
    within the second keeps it, so a recent one is no more trusted than the
    mtime (it was trusted, and such an edit was missed)."""
    recent = {"etag": "7-1796000000-5", "modified": datetime.fromtimestamp(NOW - 1, UTC)}
    assert entry_version(recent, NOW).startswith("etag:7-1796000000-5:racy@")
    assert entry_version(recent, NOW + RACY_WINDOW_SECONDS) == "etag:7-1796000000-5"


def test_size_mtime_and_inode_make_a_settled_version() -> None:
    old = NOW - 60
    assert entry_version({"size": 5, "mtime": old, "ino": 7}, NOW) == f"5:{old}:7"
    # SFTP's whole seconds, as fsspec gives them
    stamp = datetime.fromtimestamp(old, UTC)
    assert entry_version({"size": 5, "mtime": stamp}, NOW) == f"5:{old}"


def test_a_recent_mtime_is_never_the_same_version_twice() -> None:
    """A same-size edit in the same (whole) second keeps size and mtime: the
    version of such an entry names the listing, so each pass reads it again
    until the mtime is older than the window; then it settles."""
    recent = {"size": 5, "mtime": datetime.fromtimestamp(NOW - 1, UTC)}
    first, second = entry_version(recent, NOW), entry_version(recent, NOW + 0.5)
    assert first != second and first.startswith(f"5:{NOW - 1}:racy@")
    settled = entry_version(recent, NOW - 1 + RACY_WINDOW_SECONDS + 0.1)
    assert settled == f"5:{NOW - 1}" != second
    # an mtime ahead of this host's clock (a server clock ahead) is racy too
    assert ":racy@" in entry_version({"size": 5, "mtime": NOW + 30}, NOW)


def test_a_fine_grained_mtime_is_not_trusted_within_the_window_either() -> None:
    """A local disk's mtime shows nanoseconds but moves by clock ticks (a few
    ms on ext4): two same-size writes within a tick keep it. The inbox's test
    of that (tests/e2e/test_inbox_rescan.py) failed while such an mtime was
    trusted at once."""
    fine = NOW - 0.123456789
    assert ":racy@" in entry_version({"size": 5, "mtime": fine}, NOW)
    old = NOW - RACY_WINDOW_SECONDS - 0.123456789
    assert entry_version({"size": 5, "mtime": old}, NOW) == f"5:{old}"


def test_an_option_the_filesystem_does_not_take_is_the_connectors_error() -> None:
    """A misspelt option is a clear refusal in the connector's state, not a crash."""
    with pytest.raises(ConnectorError, match="cannot open webdav"):
        FsspecConnector("webdav", "/x", options={"base_url": "http://127.0.0.1:9", "usr": "u"})


def test_a_local_folder_is_listed_as_fsspec_lists_it(tmp_path: Path) -> None:
    """A local folder is walked with os.scandir rather than fsspec's find: the
    inbox sensor walks every tenant's folder each minute, 0.188 CPU-s for the
    5,282 files of 100 folders through fsspec, 0.102 now (side by side). The
    items, their versions and their subjects are the ones fsspec's walk gives:
    the fingerprint a pass records must equal the sensor's."""
    import fsspec

    root = tmp_path / "inbox"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "elsewhere").mkdir()
    for rel, data in {
        "top.md": b"x",
        "a/one.txt": b"one",
        "a/b/two.pdf": b"two!",
        "a/.subjects": b"team:a\n",
        ".hidden/secret.md": b"s",
        "elsewhere/far.md": b"far",
        "caf\u00e9 & co/r\u00e9sum\u00e9.md": b"accents",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.symlink(root / "top.md", root / "link.md")
    os.symlink(root / "elsewhere", root / "a" / "linked-folder")
    connector = FsspecConnector("file", str(root), subjects_file=".subjects")
    fsspec_files = {
        name: (info["size"], info["mtime"], info["ino"])
        for name, info in fsspec.filesystem("file").find(str(root), detail=True).items()
        if info["type"] == "file"
    }
    listed = {
        name: (info["size"], info["mtime"], info["ino"]) for name, info in connector.files().items()
    }
    assert listed == fsspec_files
    assert len(listed) == 7
    items = [item for page in connector.list_pages(None) for item in page.items]
    assert {item.item_id: item.subjects for item in items}["a/b/two.pdf"] == ("team:a",)
    assert "link.md" not in {item.item_id for item in items}  # a link is not a file here


def test_a_folder_that_cannot_be_listed_is_an_error_not_an_empty_listing(
    tmp_path: Path,
) -> None:
    """A listing is complete: a file not listed is gone. A folder below the root
    that cannot be read (fsspec's walk left it out, silently) would make every
    file in it look deleted; the pass fails, retryably, instead."""
    connector = FsspecConnector("file", str(tmp_path))
    (tmp_path / "kept.md").write_bytes(b"k")
    (tmp_path / "not-a-folder").write_bytes(b"x")
    real_scandir = os.scandir

    def refusing(path: str) -> Any:
        if path.endswith("locked"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inside.md").write_bytes(b"i")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "scandir", refusing)
        with pytest.raises(ConnectorError) as refused:
            list(connector.list_pages(None))
    assert refused.value.retryable
