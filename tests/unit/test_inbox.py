"""The inbox folder as the fsspec connector lists it: `.subjects` markers,
hidden names, the fingerprint the sensor and the pass share."""

from __future__ import annotations

import os
from pathlib import Path

from groundwork.connectors.inbox import Fingerprint, inbox_tenants
from resources.connectors.fsspec_files import MAX_MARKER_BYTES
from resources.connectors.inbox_folder import inbox_connector, inbox_fingerprint


def _listed(root: Path, tenant: str) -> dict[str, tuple[str, ...] | None]:
    pages = inbox_connector(root, tenant).list_pages(None)
    return {i.item_id: i.subjects for page in pages for i in page.items}


def test_subjects_are_inherited_from_the_nearest_marker(tmp_path: Path) -> None:
    (tmp_path / "acme" / "finance" / "deep").mkdir(parents=True)
    (tmp_path / "acme" / "finance" / "open").mkdir()
    (tmp_path / "acme" / "a.md").write_text("a")
    (tmp_path / "acme" / "finance" / ".subjects").write_text("group:finance\n# comment\n")
    (tmp_path / "acme" / "finance" / "deep" / "b.md").write_text("b")
    # an empty marker sets nothing: its folder inherits
    (tmp_path / "acme" / "finance" / "open" / ".subjects").write_text("# nobody listed\n")
    (tmp_path / "acme" / "finance" / "open" / "c.md").write_text("c")
    (tmp_path / "acme" / ".hidden.md").write_text("skip")
    (tmp_path / "acme" / ".drafts").mkdir()
    (tmp_path / "acme" / ".drafts" / ".subjects").write_text("group:drafts\n")
    (tmp_path / "acme" / ".drafts" / "d.md").write_text("skip")
    assert _listed(tmp_path, "acme") == {
        "a.md": None,  # the instance's default: tenant:acme
        "finance/deep/b.md": ("group:finance",),
        "finance/open/c.md": ("group:finance",),
    }


def test_a_root_marker_scopes_everything_and_an_oversized_one_is_ignored(
    tmp_path: Path,
) -> None:
    (tmp_path / "acme" / "legal").mkdir(parents=True)
    (tmp_path / "acme" / ".subjects").write_text("group:staff\n")
    (tmp_path / "acme" / "a.md").write_text("a")
    (tmp_path / "acme" / "legal" / ".subjects").write_text("x" * (MAX_MARKER_BYTES + 1))
    (tmp_path / "acme" / "legal" / "b.md").write_text("b")
    assert _listed(tmp_path, "acme") == {"a.md": ("group:staff",), "legal/b.md": ("group:staff",)}


def test_the_fingerprint_changes_with_content_and_scope_not_with_time(tmp_path: Path) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "notes.txt").write_text("not a tenant")
    empty = inbox_fingerprint(tmp_path, "acme")
    assert empty == Fingerprint().value == inbox_fingerprint(tmp_path, "missing")
    new = tmp_path / "acme" / "new.md"
    new.write_text("new")
    # a file this recent is racy (read again by the next pass), yet the
    # fingerprint is the same from one walk to the next: it asks for one run
    assert inbox_fingerprint(tmp_path, "acme") == inbox_fingerprint(tmp_path, "acme") != empty
    os.utime(new, (1_700_000_000, 1_700_000_000))
    settled = inbox_fingerprint(tmp_path, "acme")
    (tmp_path / "acme" / ".subjects").write_text("group:staff\n")
    assert inbox_fingerprint(tmp_path, "acme") != settled
    assert inbox_tenants(tmp_path) == ["acme"]
