"""The Git repository connector: git itself, through subprocess.

A repository on a local path is read in place; any other URL is fetched into
a bare mirror under the connector's cache folder (one `git fetch` of the one
branch per pass), so a pass's diff and every blob it names are local.
Listing reads no file bytes (`ls-tree`, `diff --raw`, `cat-file
--batch-check` for sizes); a fetch is `cat-file blob` of the path's blob on
the branch, which is the version listed unless the branch moved meanwhile.
A force-pushed branch (the last pass's commit gone, or no longer an
ancestor of the head) is listed whole: every file of the new head, and on the
last page every path it holds, so the sync service compares blobs with what
it knows (an unchanged blob is not read again) and deletes the paths that
vanished; the page's note says it happened.

Every git failure is a ConnectorError: a missing branch or repository is the
listing's, a path no longer on the branch is the item's; a timeout or a failed
fetch of a remote is retryable.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from groundwork.connectors.catalog import ConnectorInstance
from groundwork.connectors.git import (
    FILE_MODES,
    KIND,
    PAGE_SIZE,
    GitCursor,
    GitRepositoryConfig,
    Listed,
    auth_config,
    listed_changes,
    location,
    parse_raw_diff,
    parse_tree,
    scope_of,
    selection_of,
)
from groundwork.connectors.port import ConnectorError, FetchResult, ListingPage, SourceItem

#: git reads no user or system configuration and never prompts for a password
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


class GitRepositoryConnector:
    kind = KIND
    complete_listing = False  # deletions come from the diff, not from absence
    sorted_listing = False
    lasting_locations = True  # a commit and path name the same bytes for good

    def __init__(
        self,
        config: GitRepositoryConfig,
        cache_dir: Path | None = None,
        *,
        page_size: int = PAGE_SIZE,
        extra_config: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.page_size = page_size
        local = Path(config.url)
        self._remote = not local.is_dir()
        if self._remote and cache_dir is None:
            raise ConnectorError(
                KIND, None, f"{config.url} is not a local repository: a cache folder is needed"
            )
        self.repo = cache_dir / "mirror.git" if self._remote and cache_dir else local
        #: configuration from a secret (groundwork.connectors.git.auth_config), by environment
        extra = dict(extra_config or {})
        self._env = {**os.environ, **GIT_ENV, "GIT_CONFIG_COUNT": str(len(extra))}
        for n, (key, value) in enumerate(extra.items()):
            self._env[f"GIT_CONFIG_KEY_{n}"] = key
            self._env[f"GIT_CONFIG_VALUE_{n}"] = value
        self.ref = f"refs/heads/{config.branch}"

    # -- git ----------------------------------------------------------------

    def _run(
        self, *args: str, item_id: str | None = None, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        command = ["git", "-C", str(self.repo), *args]
        try:
            return subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                timeout=self.config.timeout_seconds,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ConnectorError(KIND, item_id, f"git {args[0]} timed out", retryable=True) from exc
        except OSError as exc:
            raise ConnectorError(KIND, item_id, f"git cannot run: {exc.strerror}") from exc

    def _git(self, *args: str, item_id: str | None = None, stdin: bytes | None = None) -> bytes:
        done = self._run(*args, item_id=item_id, stdin=stdin)
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise ConnectorError(
                KIND, item_id, f"git {args[0]}: {message[-1] if message else done.returncode}"
            )
        return done.stdout

    def _head(self) -> str:
        """The branch's commit now; a remote is fetched into the mirror first."""
        if self._remote:
            if not (self.repo / "HEAD").exists():
                self.repo.mkdir(parents=True, exist_ok=True)
                self._git("init", "--bare", "--quiet")
            try:
                self._git(
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--force",
                    self.config.url,
                    f"+{self.ref}:{self.ref}",
                )
            except ConnectorError as exc:
                raise ConnectorError(KIND, None, exc.reason, retryable=True) from exc
        return (
            self._git("rev-parse", "--verify", "--quiet", f"{self.ref}^{{commit}}").decode().strip()
        )

    # -- listing ------------------------------------------------------------

    def list_pages(self, cursor: str | None) -> Iterator[ListingPage]:
        state = GitCursor.decode(cursor)
        scope = scope_of(self.config)
        if state.head is not None:  # resuming a pass: the same entries, from where it stopped
            head, base = state.head, state.commit
        else:
            head, base = self._head(), state.commit
        rescoped = base is not None and state.scope is not None and state.scope != scope
        if base == head and not rescoped:
            yield ListingPage((), (), GitCursor(commit=head, scope=scope).encode())
            return
        rewritten = self._rewritten(base, head) if base is not None else None
        if rewritten is not None:
            # no diff tells what went: the whole tree, and on the last page
            # every path it holds (the sync service deletes the rest)
            entries = self._tree(head)
            live: list[str] | None = [e.path for e in entries if e.path]
        else:
            entries = self._entries(base, head, state.scope if rescoped else None)
            live = None
        if state.after is not None:
            entries = [e for e in entries if e.key() > state.after]
        for start in range(0, max(len(entries), 1), self.page_size):
            page = entries[start : start + self.page_size]
            sizes = self._sizes([e.blob for e in page if e.blob])
            items = [
                self._item(e.path, e.blob, sizes.get(e.blob), head)
                for e in page
                if e.path and e.blob
            ]
            deleted = [e.deleted for e in page if e.deleted]
            last = start + self.page_size >= len(entries)
            if last:
                next_cursor = GitCursor(commit=head, scope=scope)
            else:
                next_cursor = GitCursor(base, head, page[-1].key(), state.scope or scope)
            yield ListingPage(
                items,
                deleted,
                next_cursor.encode(),
                live=live if last else None,
                notes=(rewritten,) if rewritten else (),
            )

    def _rewritten(self, base: str, head: str) -> str | None:
        """Why the branch's history no longer runs through the last pass's
        commit (gone from the repository, or not an ancestor of the head: a
        force-push), or None when it does and a diff tells what changed."""
        if self._run("cat-file", "-e", f"{base}^{{commit}}").returncode != 0:
            how = "is gone from the repository"
        else:
            done = self._run("merge-base", "--is-ancestor", base, head)
            if done.returncode == 0:
                return None
            if done.returncode != 1:
                message = done.stderr.decode(errors="replace").strip()
                raise ConnectorError(KIND, None, f"git merge-base: {message}")
            how = f"is not an ancestor of {self.config.branch}"
        return (
            f"history rewritten: the last pass's commit {base[:12]} {how}; listed the whole "
            f"tree of {head[:12]} and compared it with the known items"
        )

    def _entries(
        self, base: str | None, head: str, old_scope: Mapping[str, Any] | None
    ) -> list[Listed]:
        """The first pass: the tree. Later: the diff since `base`, or, when the
        scope changed since, the whole tree under the new scope beside what the
        old scope took that the new one does not (reported deleted)."""
        if base is None:
            return self._tree(head)
        if old_scope is None:
            return self._changes(base, head)
        now = self._tree(head)
        listed = {e.path for e in now}
        before = selection_of(old_scope)
        gone = [
            Listed(None, None, e.path)
            for e in parse_tree(self._git("ls-tree", "-r", "-z", "--long", "--full-tree", base))
            if e.mode in FILE_MODES and before.selects(e.path) and e.path not in listed
        ]
        return sorted([*now, *gone], key=Listed.key)

    def _item(self, path: str, blob: str, size: int | None, head: str) -> SourceItem:
        return SourceItem(
            path,
            blob,
            size,
            None,
            self.config.subjects.subjects_for(path),
            location(head, path, self.config.branch),
        )

    def _tree(self, head: str) -> list[Listed]:
        selection = self.config.selection
        return sorted(
            (
                Listed(e.path, e.blob, None)
                for e in parse_tree(self._git("ls-tree", "-r", "-z", "--long", "--full-tree", head))
                if e.mode in FILE_MODES and selection.selects(e.path)
            ),
            key=Listed.key,
        )

    def _changes(self, base: str, head: str) -> list[Listed]:
        raw = self._git("diff", "--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", base, head)
        return listed_changes(parse_raw_diff(raw), self.config.selection)

    def _sizes(self, blobs: list[str]) -> dict[str, int]:
        if not blobs:
            return {}
        out = self._git(
            "cat-file",
            "--batch-check=%(objectname) %(objectsize)",
            stdin="\n".join(blobs).encode() + b"\n",
        )
        sizes = {}
        for line in out.decode().splitlines():
            name, _, size = line.partition(" ")
            if size.isdigit():
                sizes[name] = int(size)
        return sizes

    # -- fetch --------------------------------------------------------------

    def fetch(self, item: SourceItem, known_version: str | None) -> FetchResult:
        """The path's blob on the branch as the last listing left it; a path
        gone from the branch is the item's ConnectorError (the next diff
        reports the deletion)."""
        try:
            blob = self._git(
                "rev-parse",
                "--verify",
                "--quiet",
                f"{self.ref}:{item.item_id}",
                item_id=item.item_id,
            )
        except ConnectorError as exc:
            raise ConnectorError(
                KIND, item.item_id, f"not on {self.config.branch} any more"
            ) from exc
        version = blob.decode().strip()
        if version == known_version:
            return FetchResult(None, version, item.media_type)
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller reads and closes it
        command = ["git", "-C", str(self.repo), "cat-file", "blob", version]
        try:
            done = subprocess.run(
                command,
                stdout=spool,
                stderr=subprocess.PIPE,
                timeout=self.config.timeout_seconds,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            spool.close()
            raise ConnectorError(
                KIND, item.item_id, "git cat-file timed out", retryable=True
            ) from exc
        if done.returncode != 0:
            spool.close()
            raise ConnectorError(
                KIND, item.item_id, f"git cat-file: {done.stderr.decode(errors='replace').strip()}"
            )
        spool.seek(0)
        return FetchResult(spool, version, item.media_type)


def build_git(
    instance: ConnectorInstance, secrets: Mapping[str, str], cache_root: Path
) -> GitRepositoryConnector:
    """The connector of a stored instance (for resources/connectors/factory.py's
    BUILDERS, which resolves the secrets): a remote's mirror lives in the
    instance's own folder under `cache_root`."""
    return GitRepositoryConnector(
        GitRepositoryConfig.from_config(instance.config),
        cache_root / instance.instance_id,
        extra_config=auth_config(secrets),
    )
