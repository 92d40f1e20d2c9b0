"""The Git repository connector against a bare repository made in the test:
the branch's tree first, then only the commit diff since the cursor; renames
as one move, globs, blob versions, the commit and path for citations, and
git's failures as ConnectorError."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.git import GitCursor, GitRepositoryConfig, parse_raw_diff
from groundwork.connectors.port import ConnectorError, ListingPage
from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix
from resources.connectors.git_repository import GitRepositoryConnector, build_git
from testbed.git_repository import BareRepository


@pytest.fixture
def repo(tmp_path: Path) -> BareRepository:
    return BareRepository(tmp_path)


def connector(repo: BareRepository, **config: object) -> GitRepositoryConnector:
    return GitRepositoryConnector(GitRepositoryConfig(str(repo.bare), **config), page_size=2)  # type: ignore[arg-type]


def drain(conn: GitRepositoryConnector, cursor: str | None) -> tuple[list[ListingPage], str | None]:
    pages = list(conn.list_pages(cursor))
    return pages, pages[-1].cursor


def test_first_pass_lists_the_tree_then_only_the_diff(repo: BareRepository) -> None:
    repo.write("docs/a.md", "# A")
    repo.write("docs/b.md", "# B")
    repo.write("docs/c.md", "# C")
    first_commit = repo.commit("three docs")
    conn = connector(repo)
    pages, cursor = drain(conn, None)
    items = {i.item_id: i for p in pages for i in p.items}
    assert sorted(items) == ["docs/a.md", "docs/b.md", "docs/c.md"]
    assert items["docs/a.md"].version == repo.blob("docs/a.md")
    assert items["docs/a.md"].size == 3
    assert items["docs/a.md"].location == {
        "commit": first_commit,
        "path": "docs/a.md",
        "branch": "main",
    }
    assert GitCursor.decode(cursor).commit == first_commit

    repo.write("docs/a.md", "# A, revised")
    repo.git("rm", "--quiet", "docs/b.md")
    second = repo.commit("edit a, drop b")
    pages, cursor = drain(conn, cursor)
    assert [i.item_id for p in pages for i in p.items] == ["docs/a.md"]
    assert [d for p in pages for d in p.deleted] == ["docs/b.md"]
    assert pages[0].items[0].location["commit"] == second
    again, same = drain(conn, cursor)
    assert [list(p.items) + list(p.deleted) for p in again] == [[]] and same == cursor


def test_a_rename_is_one_move_in_one_page(repo: BareRepository) -> None:
    body = "# Guide\n" + "the same words\n" * 50
    repo.put("docs/guide.md", body)
    conn = connector(repo)
    _, cursor = drain(conn, None)
    repo.move("docs/guide.md", "handbook/guide.md")
    pages, _ = drain(conn, cursor)
    assert len(pages) == 1
    (page,) = pages
    assert [i.item_id for i in page.items] == ["handbook/guide.md"]
    assert list(page.deleted) == ["docs/guide.md"]
    assert page.items[0].version == repo.blob("handbook/guide.md")


def test_globs_select_paths_and_subjects_follow_prefixes(repo: BareRepository) -> None:
    for path in ("docs/a.md", "docs/img.png", "src/main.py", ".github/ci.yml", "docs/hr/pay.md"):
        repo.write(path, path)
    repo.commit()
    conn = connector(
        repo,
        selection=ItemSelection(include=("docs/*",), exclude=("*.png",)),
        subjects=SubjectsByPrefix({"docs/hr/": ("group:hr",)}),
    )
    pages, cursor = drain(conn, None)
    items = {i.item_id: i for p in pages for i in p.items}
    assert sorted(items) == ["docs/a.md", "docs/hr/pay.md"]
    assert items["docs/hr/pay.md"].subjects == ("group:hr",)
    assert items["docs/a.md"].subjects is None
    # a move out of the selection is a deletion; into it, a new item
    repo.move("docs/a.md", "src/a.md")
    repo.move("src/main.py", "docs/main.py")
    pages, _ = drain(conn, cursor)
    assert [i.item_id for p in pages for i in p.items] == ["docs/main.py"]
    assert [d for p in pages for d in p.deleted] == ["docs/a.md"]


def test_a_changed_scope_lists_the_tree_again(repo: BareRepository) -> None:
    for path in ("docs/a.md", "docs/hr/pay.md", "notes/n.md"):
        repo.write(path, path)
    repo.commit()
    _, cursor = drain(connector(repo, selection=ItemSelection(include=("docs/*",))), None)
    # no new commit; the instance now takes notes/ too, leaves docs/a.md out and scopes docs/hr/
    regrouped = connector(
        repo,
        selection=ItemSelection(include=("docs/*", "notes/*"), exclude=("docs/a.md",)),
        subjects=SubjectsByPrefix({"docs/hr/": ("group:hr",)}),
    )
    pages, cursor = drain(regrouped, cursor)
    items = {i.item_id: i for p in pages for i in p.items}
    assert sorted(items) == ["docs/hr/pay.md", "notes/n.md"]
    assert items["docs/hr/pay.md"].subjects == ("group:hr",)
    assert [d for p in pages for d in p.deleted] == ["docs/a.md"]
    again, _ = drain(regrouped, cursor)
    assert [list(p.items) + list(p.deleted) for p in again] == [[]]


def test_fetch_streams_the_blob_and_knows_it_unchanged(repo: BareRepository) -> None:
    repo.put("a.txt", b"exact bytes\x00\xff")
    conn = connector(repo)
    (item,) = [i for p in conn.list_pages(None) for i in p.items]
    fetched = conn.fetch(item, None)
    assert fetched.stream is not None and fetched.stream.read() == b"exact bytes\x00\xff"
    assert fetched.version == item.version
    assert conn.fetch(item, item.version).stream is None


def test_a_pass_resumes_mid_diff_at_the_same_head(repo: BareRepository) -> None:
    repo.put("seed.txt", "seed")
    conn = connector(repo)
    _, cursor = drain(conn, None)
    for n in range(5):
        repo.write(f"n{n}.txt", str(n))
    repo.commit()
    first = next(iter(conn.list_pages(cursor)))
    repo.put("later.txt", "after the crash")  # the branch moves while the pass is down
    rest, end = drain(conn, first.cursor)
    resumed = [i.item_id for p in rest for i in p.items]
    assert resumed == ["n2.txt", "n3.txt", "n4.txt"]
    tail, _ = drain(conn, end)
    assert [i.item_id for p in tail for i in p.items] == ["later.txt"]


def test_a_remote_is_fetched_into_a_mirror(repo: BareRepository, tmp_path: Path) -> None:
    repo.put("a.md", "remote words")
    conn = GitRepositoryConnector(
        GitRepositoryConfig(f"file://{repo.bare}"), tmp_path / "cache", page_size=2
    )
    (item,) = [i for p in conn.list_pages(None) for i in p.items]
    stream = conn.fetch(item, None).stream
    assert stream is not None and stream.read() == b"remote words"
    assert (tmp_path / "cache" / "mirror.git" / "HEAD").exists()


def test_failures_are_connector_errors(repo: BareRepository, tmp_path: Path) -> None:
    repo.put("a.md", "a")
    with pytest.raises(ConnectorError) as no_branch:
        list(connector(repo, branch="no-such-branch").list_pages(None))
    assert no_branch.value.item_id is None
    unreachable = GitRepositoryConnector(
        GitRepositoryConfig(f"file://{tmp_path}/nowhere.git"), tmp_path / "cache"
    )
    with pytest.raises(ConnectorError) as fetch_failed:
        list(unreachable.list_pages(None))
    assert fetch_failed.value.retryable


@pytest.mark.parametrize("prune", [True, False], ids=["old-commit-gone", "not-an-ancestor"])
def test_a_rewritten_history_lists_the_new_tree_with_every_live_path(
    repo: BareRepository, prune: bool
) -> None:
    repo.write("a.md", "# A")
    repo.write("b.md", "# B")
    repo.write("c.md", "# C")
    old = repo.commit("three")
    conn = connector(repo)
    _, cursor = drain(conn, None)
    head = repo.rewrite_history({"a.md": "# A", "b.md": "# B, rewritten", "d.md": "# D"}, prune)

    pages, end = drain(conn, cursor)
    assert [i.item_id for p in pages for i in p.items] == ["a.md", "b.md", "d.md"]
    assert [d for p in pages for d in p.deleted] == []
    assert [p.live for p in pages[:-1]] == [None] * (len(pages) - 1)
    assert sorted(pages[-1].live or ()) == ["a.md", "b.md", "d.md"], "c.md vanished"
    notes = [n for p in pages for n in p.notes]
    assert notes and old[:12] in notes[0] and head[:12] in notes[0]
    assert GitCursor.decode(end).commit == head
    # after it, diffs again from the new head
    repo.put("d.md", "# D, edited")
    pages, _ = drain(conn, end)
    assert [i.item_id for p in pages for i in p.items] == ["d.md"]
    assert all(p.live is None and not p.notes for p in pages)


def test_a_resumed_pass_over_a_rewritten_history_still_names_every_live_path(
    repo: BareRepository,
) -> None:
    for n in range(5):
        repo.write(f"n{n}.md", str(n))
    repo.commit("five")
    conn = connector(repo)
    _, cursor = drain(conn, None)
    repo.rewrite_history({f"n{n}.md": f"{n}!" for n in range(4)}, prune=True)
    first = next(iter(conn.list_pages(cursor)))
    rest, _ = drain(conn, first.cursor)  # the pass crashed after its first page
    assert [i.item_id for p in rest for i in p.items] == ["n2.md", "n3.md"]
    assert sorted(rest[-1].live or ()) == [f"n{n}.md" for n in range(4)]


def test_raw_diff_lines_parse_with_renames() -> None:
    raw = (
        b":100644 100644 aaa bbb M\0docs/a.md\0"
        b":100644 100644 ccc ccc R100\0old/b.md\0new/b.md\0"
        b":100644 000000 ddd 000 D\0gone.md\0"
    )
    changes = parse_raw_diff(raw)
    assert [(c.status, c.path, c.old_path) for c in changes] == [
        ("M", "docs/a.md", None),
        ("R", "new/b.md", "old/b.md"),
        ("D", "gone.md", None),
    ]


def test_a_stored_instance_builds_with_its_token_out_of_the_command_line(
    repo: BareRepository, tmp_path: Path
) -> None:
    instance = ConnectorInstance(
        "con_git", "t", "git", "repo", {"url": str(repo.bare), "include": ["*.md"]}, {}, ()
    )
    conn = build_git(instance, {"token": "s3cr3t"}, tmp_path)
    assert conn.config.selection.include == ("*.md",)
    header = conn._git("config", "--get", "http.extraHeader").decode().strip()
    assert header == "Authorization: Bearer s3cr3t"
    with pytest.raises(ValueError, match="secret reference"):
        GitRepositoryConfig.from_config({"url": "https://user:pw@git.example/repo.git"})
    with pytest.raises(ValueError):
        GitRepositoryConfig.from_config({})
