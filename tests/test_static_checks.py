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


def test_layer_contracts() -> None:
    """import-linter, with the contracts in pyproject.toml: the core imports no
    framework, driver, adapter or transport; adapters import no evals, assets or
    transports; HTTP and MCP are independent; transports import no Dagster code."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "BROKEN" not in result.stdout and "KEPT" in result.stdout


def test_the_access_predicate_is_written_once() -> None:
    """Every query that reads tenant content calls groundwork_readable (migration
    0015) instead of spelling out the subject overlap again."""
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "resources").rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if "subjects &&" in line
    ]
    assert offenders == []
