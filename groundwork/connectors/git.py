"""The Git repository connector's policy: one branch, path globs, and a pass
that costs the commit diff since the last one. The git CLI that applies it is
resources/connectors/git_repository.py.

An item is a file on the branch: its id is its path, its version the blob id
(a content address: it changes exactly when the bytes do), its location the
commit and path a citation names. The first pass lists the branch's tree; every
later pass reads `git diff --raw -M` from the commit the last pass finished at
(the cursor), so it lists only what was added, modified, deleted or renamed. A
rename is the new path listed with the same blob beside the old path deleted,
in one page: the sync service sees the same bytes leave one id and arrive at
another and keeps them as one source (nothing extracted again).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwork.connectors.selection import ItemSelection, SubjectsByPrefix

KIND = "git"
PAGE_SIZE = 500
#: file modes that are documents: regular and executable files (symlinks and
#: submodules name other things)
FILE_MODES = ("100644", "100755")


@dataclass(frozen=True)
class GitRepositoryConfig:
    """`url` is a path or any URL git fetches (credentials never in it: the
    builder passes them to git from a secret reference)."""

    url: str
    branch: str = "main"
    selection: ItemSelection = field(default_factory=ItemSelection)
    subjects: SubjectsByPrefix = field(default_factory=SubjectsByPrefix)
    timeout_seconds: float = 300.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GitRepositoryConfig:
        """From an instance's stored configuration (which holds no secret)."""
        url = str(config.get("url") or "")
        if not url:
            raise ValueError("a git connector needs the repository's url")
        if "@" in url.split("://", 1)[-1].split("/", 1)[0]:
            raise ValueError("credentials go in a secret reference, never in the url")
        return cls(
            url=url,
            branch=str(config.get("branch") or "main"),
            selection=ItemSelection(
                tuple(config.get("include") or ()), tuple(config.get("exclude") or ())
            ),
            subjects=SubjectsByPrefix.from_config(config.get("subjects_by_prefix")),
            timeout_seconds=float(config.get("timeout_seconds") or 300.0),
        )


def auth_config(secrets: Mapping[str, str]) -> dict[str, str]:
    """git configuration carrying a secret: a `token` as an HTTP bearer header
    (what hosted forges accept for HTTPS). It reaches git through its
    environment (GIT_CONFIG_COUNT ...), never its command line, which any
    local user can read."""
    token = secrets.get("token")
    return {"http.extraHeader": f"Authorization: Bearer {token}"} if token else {}


@dataclass(frozen=True)
class TreeEntry:
    path: str
    blob: str
    mode: str
    size: int | None


@dataclass(frozen=True)
class Change:
    """One line of `git diff --raw -z -M`: status A, M, D, R (renamed), T (type change)."""

    status: str
    path: str
    blob: str  # the new blob; zeros for a deletion
    mode: str  # the new mode
    old_path: str | None = None  # for a rename


@dataclass(frozen=True)
class GitCursor:
    """`commit`: the commit the last finished pass listed, and `scope` the
    selection and subjects it was listed under (a pass under another scope
    lists the whole tree again: a diff would not show a file whose subjects or
    selection changed while its bytes did not). Mid-pass, `head` is the commit
    being listed and `after` the last path a stored page reached, so a
    resumed pass lists the same entries from the same point."""

    commit: str | None = None
    head: str | None = None
    after: str | None = None
    scope: Mapping[str, Any] | None = None

    def encode(self) -> str:
        return json.dumps({k: v for k, v in self.__dict__.items() if v is not None})

    @classmethod
    def decode(cls, cursor: str | None) -> GitCursor:
        if not cursor:
            return cls()
        raw = json.loads(cursor)
        return cls(raw.get("commit"), raw.get("head"), raw.get("after"), raw.get("scope"))


def scope_of(config: GitRepositoryConfig) -> dict[str, Any]:
    """What a cursor remembers of the configuration that decides what is listed and how."""
    return {
        "include": list(config.selection.include),
        "exclude": list(config.selection.exclude),
        "subjects": {k: list(v) for k, v in sorted(config.subjects.prefixes.items())},
    }


def selection_of(scope: Mapping[str, Any]) -> ItemSelection:
    return ItemSelection(tuple(scope.get("include") or ()), tuple(scope.get("exclude") or ()))


def parse_tree(output: bytes) -> list[TreeEntry]:
    """`git ls-tree -r -z --long`: `<mode> <type> <blob> <size>\\t<path>` NUL-separated."""
    entries = []
    for record in output.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob, size = meta.decode().split()
        if kind == "blob":
            entries.append(TreeEntry(path.decode(), blob, mode, None if size == "-" else int(size)))
    return entries


def parse_raw_diff(output: bytes) -> list[Change]:
    """`git diff --raw -z -M`: `:<old mode> <new mode> <old> <new> <status>` NUL
    `<path>` NUL (and NUL `<new path>` NUL for a rename or copy)."""
    fields = output.split(b"\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields) and fields[i]:
        meta = fields[i].decode().lstrip(":").split()
        _old_mode, new_mode, _old_blob, new_blob, status = meta
        letter = status[0]
        if letter in ("R", "C"):
            old, new = fields[i + 1].decode(), fields[i + 2].decode()
            i += 3
            changes.append(Change("R" if letter == "R" else "A", new, new_blob, new_mode, old))
            continue
        changes.append(Change(letter, fields[i + 1].decode(), new_blob, new_mode))
        i += 2
    return changes


@dataclass(frozen=True)
class Listed:
    """What one change means for the listing: a path listed with its blob,
    and/or a path reported gone."""

    path: str | None
    blob: str | None
    deleted: str | None

    def key(self) -> str:
        """The listing's order and a resumed pass's "after" point."""
        return f"{self.path or self.deleted}\0{self.deleted or ''}"


def listed_changes(changes: Sequence[Change], selection: ItemSelection) -> list[Listed]:
    """Changes as listing entries, in path order. A rename within the
    selection is one entry (new path listed, old deleted) so both land in the
    same page; a rename across the selection's edge is an add or a delete."""
    out: list[Listed] = []
    for change in changes:
        is_file = change.mode in FILE_MODES
        keep_new = change.status != "D" and is_file and selection.selects(change.path)
        old = change.old_path if change.status == "R" else change.path
        gone = old if change.status in ("D", "R", "T") and selection.selects(old or "") else None
        if change.status == "T" and keep_new:
            gone = None  # a type change into a file is a modification of it
        if keep_new or gone:
            out.append(
                Listed(change.path if keep_new else None, change.blob if keep_new else None, gone)
            )
    return sorted(out, key=Listed.key)


def location(commit: str, path: str, branch: str) -> Mapping[str, str]:
    return {"commit": commit, "path": path, "branch": branch}
