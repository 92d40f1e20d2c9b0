"""A bare Git repository made for a test or a bench, with a working clone
that commits and pushes to it: the source the Git connector reads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.test",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.test",
}


class BareRepository:
    def __init__(self, root: Path, branch: str = "main") -> None:
        self.bare = root / "origin.git"
        self.work = root / "work"
        self.branch = branch
        self._run(root, "init", "--bare", "--quiet", f"--initial-branch={branch}", str(self.bare))
        self._run(root, "init", "--quiet", f"--initial-branch={branch}", str(self.work))
        self.git("remote", "add", "origin", str(self.bare))

    @staticmethod
    def _run(cwd: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, check=True)
        return done.stdout.decode().strip()

    def git(self, *args: str) -> str:
        return self._run(self.work, *args)

    def write(self, path: str, data: bytes | str) -> None:
        target = self.work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def commit(self, message: str = "change") -> str:
        """Commits everything in the working clone and pushes it; the new commit id."""
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        self.git("push", "--quiet", "origin", f"HEAD:refs/heads/{self.branch}")
        return self.git("rev-parse", "HEAD")

    def put(self, path: str, data: bytes | str) -> str:
        self.write(path, data)
        return self.commit(f"put {path}")

    def remove(self, path: str) -> str:
        self.git("rm", "--quiet", path)
        return self.commit(f"remove {path}")

    def move(self, old: str, new: str) -> str:
        (self.work / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)
        return self.commit(f"move {old} to {new}")

    def blob(self, path: str) -> str:
        return self.git("rev-parse", f"HEAD:{path}")

    def rewrite_history(self, files: dict[str, str], prune: bool) -> str:
        """Force-pushes a new root commit holding only `files` (history
        rewritten); `prune` also removes the old commits from the bare
        repository, as a server's gc does after a force-push. The new commit id."""
        self.git("checkout", "--quiet", "--orphan", f"rewritten-{len(files)}-{prune}")
        self.git("rm", "-r", "--quiet", "--cached", ".")
        for path in self.git("ls-files", "--others").splitlines():
            (self.work / path).unlink()
        for path, text in files.items():
            self.write(path, text)
        self.git("add", "--all")
        self.git("commit", "--quiet", "-m", "history rewritten")
        self.git("push", "--quiet", "--force", "origin", f"HEAD:refs/heads/{self.branch}")
        if prune:
            self._run(self.bare, "reflog", "expire", "--expire=now", "--all")
            self._run(self.bare, "gc", "--quiet", "--prune=now")
        return self.git("rev-parse", "HEAD")
