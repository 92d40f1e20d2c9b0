"""HTML pages of the shared corpus (docling/html, docling's reference
Markdown beside them) scored as bench/extraction.py scores them: page
similarity and table-cell recall/precision, over all pages and over the pages
whose reference holds a table; the lowest page named.

    uv run python bench/html_tables.py [--data ../shared/data/documents] [--base DIR]

--base DIR also extracts with the checkout at DIR (`git worktree add DIR
HEAD` before a change), in a subprocess, and prints its figures first: before
and after from one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from rapidfuzz.distance import Levenshtein

from bench.extraction import DEFAULT_DATA, cell_scores, normalise, scored_documents, table_cells

_WORKER = """
import json, sys
from pathlib import Path
from groundwork.extract import extract
from groundwork.render.markdown import to_markdown
out = {}
for name in sys.argv[1:]:
    path = Path(name)
    out[name] = to_markdown(extract(path.read_bytes(), "text/html", path.name).blocks)
json.dump(out, sys.stdout)
"""


def extracted(paths: list[Path], code: Path) -> dict[str, str]:
    """Each page's Markdown as the checkout at `code` extracts it."""
    completed = subprocess.run(
        [sys.executable, "-c", _WORKER, *map(str, paths)],
        cwd=code,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, str] = json.loads(completed.stdout)
    return result


def report(label: str, pages: list[tuple[Path, Path]], markdown: dict[str, str]) -> None:
    similarity: list[float] = []
    tabled: list[tuple[float, float, float, str]] = []
    for source, truth_path in pages:
        ours, truth = markdown[str(source)], truth_path.read_text(errors="replace")
        sim = Levenshtein.normalized_similarity(normalise(ours), normalise(truth))
        similarity.append(sim)
        recall, precision = cell_scores(table_cells(truth), table_cells(ours))
        if recall is not None:
            tabled.append((sim, recall, precision or 0.0, source.name))
    worst = min(tabled, key=lambda t: t[1])
    print(
        f"{label:6s} {len(similarity)} HTML pages: similarity {statistics.mean(similarity):.3f}; "
        f"{len(tabled)} with tables: similarity {statistics.mean(t[0] for t in tabled):.3f}, "
        f"cell recall {statistics.mean(t[1] for t in tabled):.3f}, "
        f"precision {statistics.mean(t[2] for t in tabled):.3f} "
        f"(lowest cell recall {worst[1]:.3f}, {worst[3]})"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--base", type=Path, help="a checkout to measure first (the before)")
    args = parser.parse_args()
    folder = args.data / "docling" / "html"
    if not folder.exists():
        print(f"no HTML pages at {folder}")
        return 1
    pages = list(scored_documents(folder))
    runs = [("before", args.base)] if args.base else []
    runs.append(("after", Path(__file__).resolve().parents[1]))
    for label, code in runs:
        report(label, pages, extracted([s for s, _ in pages], code.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
