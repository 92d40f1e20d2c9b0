"""The one rich console every command prints its human-readable report through
(plain `print` stays for what a script pipes: secrets, tab-separated lists)."""

from __future__ import annotations

from rich.console import Console

console = Console()
