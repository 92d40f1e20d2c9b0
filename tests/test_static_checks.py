"""The code stays ruff-clean and mypy-clean: checked with the pinned tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "agent_tools",
    "groundwork",
    "resources",
    "assets",
    "pipelines",
    "retrieval_api",
    "groundwork_cli",
    "evals",
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_lint_and_format() -> None:
    lint = _run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy() -> None:
    result = _run("mypy", *PACKAGES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_core_imports_no_framework() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}"
        for path in (ROOT / "groundwork").rglob("*.py")
        for line in path.read_text().splitlines()
        if line.startswith(("import ", "from "))
        and any(f in line for f in ("dagster", "fastapi", "psycopg", "opensearchpy"))
    ]
    assert offenders == []
