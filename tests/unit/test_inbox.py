from __future__ import annotations

from pathlib import Path

from groundwork.connectors.inbox import inbox_fingerprint, inbox_tenants, scan_tenant_inbox


def test_subjects_are_inherited_from_the_nearest_marker(tmp_path: Path) -> None:
    (tmp_path / "acme" / "finance" / "deep").mkdir(parents=True)
    (tmp_path / "acme" / "a.md").write_text("a")
    (tmp_path / "acme" / "finance" / ".subjects").write_text("group:finance\n# comment\n")
    (tmp_path / "acme" / "finance" / "deep" / "b.md").write_text("b")
    (tmp_path / "acme" / ".hidden.md").write_text("skip")
    found = {f.relative: f.subjects for f in scan_tenant_inbox(tmp_path, "acme")}
    assert found == {"a.md": ("tenant:acme",), "finance/deep/b.md": ("group:finance",)}


def test_fingerprint_changes_with_content_and_tenants_are_folders(tmp_path: Path) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "notes.txt").write_text("not a tenant")
    before = inbox_fingerprint(tmp_path, "acme")
    (tmp_path / "acme" / "new.md").write_text("new")
    assert inbox_fingerprint(tmp_path, "acme") != before
    assert inbox_tenants(tmp_path) == ["acme"]
    assert list(scan_tenant_inbox(tmp_path, "missing")) == []
