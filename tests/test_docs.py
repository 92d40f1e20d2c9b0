"""The documentation stays a map a newcomer can follow.

The README is the first page and stays short (the reference lives in docs/);
every relative link in the README, CONTRIBUTING.md and docs/ names a file that
exists, so a moved or renamed page fails here instead of in a reader's browser.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 200

#: inline links and images: [text](target "title"); reference definitions: [id]: target
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
FENCED_BLOCK = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)  # http:, mailto:, //host


def _documents() -> list[Path]:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert all(page.is_file() for page in pages), [str(p) for p in pages if not p.is_file()]
    return pages


def _relative_links(page: Path) -> list[str]:
    """Link targets outside code (a fenced block or an inline span is text, not a
    link), without the external ones and without pure in-page anchors."""
    text = INLINE_CODE.sub("", FENCED_BLOCK.sub("", page.read_text(encoding="utf-8")))
    targets = INLINE_LINK.findall(text) + REFERENCE_DEFINITION.findall(text)
    return [t for t in targets if not EXTERNAL.match(t) and not t.startswith("#")]


def test_readme_is_at_most_two_hundred_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): "
        "move reference material to docs/"
    )


def test_every_relative_link_names_an_existing_file() -> None:
    broken = []
    for page in _documents():
        for target in _relative_links(page):
            path = target.split("#", 1)[0].split("?", 1)[0]
            resolved = ROOT / path.lstrip("/") if path.startswith("/") else page.parent / path
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_link_check_sees_the_links() -> None:
    """The check above cannot pass by finding nothing: the README's "where to go
    next" links are seen (and so checked)."""
    readme_links = {t.split("#", 1)[0] for t in _relative_links(ROOT / "README.md")}
    assert {
        "docs/operations.md",
        "docs/api-and-tools.md",
        "docs/evals.md",
        "docs/architecture.md",
        "CONTRIBUTING.md",
        "bench/README.md",
    } <= readme_links


def test_the_link_pattern_finds_links_and_ignores_code() -> None:
    sample = (
        'See [ops](docs/operations.md#ports) and ![a](img/x.png "t").\n'
        "`[not](a-link.md)` and [web](https://example.org) and [here](#top)\n"
        "```\n[also not](inside-a-fence.md)\n```\n"
        "[ref]: CONTRIBUTING.md\n"
    )
    text = INLINE_CODE.sub("", FENCED_BLOCK.sub("", sample))
    found = INLINE_LINK.findall(text) + REFERENCE_DEFINITION.findall(text)
    assert found == [
        "docs/operations.md#ports",
        "img/x.png",
        "https://example.org",
        "#top",
        "CONTRIBUTING.md",
    ]
