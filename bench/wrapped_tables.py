"""Tables whose cells wrap onto several lines (testbed/wrapped_tables.py):
row recall (a ground-truth row found whole, every cell as printed, among the
extracted rows), cell precision (cells as multisets of their text, case and
spacing aside) and false
tables on the table-free pages, per layout and overall.

    uv run python bench/wrapped_tables.py [--base DIR] [--verbose]

--base DIR also runs the extractor of another checkout on the same PDFs, in a
subprocess with DIR first on the path (`git worktree add DIR HEAD` gives the
code before a change), and prints its figures above ours: before and after
from one run, on one machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from testbed.table_pdfs import GeneratedPdf
from testbed.wrapped_tables import Found, score, wrapped_corpus

_WORKER = """
import json, sys
from pathlib import Path
from groundwork.documents import BlockKind, ExtractedDocument
from groundwork.extract import extract
out = {}
for path in sorted(Path(sys.argv[1]).glob("*.pdf")):
    result = extract(path.read_bytes(), "application/pdf", path.name)
    tables = []
    if isinstance(result, ExtractedDocument):
        tables = [
            (b.location.page or 0, [list(r) for r in b.table.rows])
            for b in result.blocks
            if b.kind is BlockKind.TABLE and b.table is not None
        ]
    out[path.stem] = tables
json.dump(out, sys.stdout)
"""


def extracted_tables(folder: Path, code: Path) -> dict[str, Found]:
    """Every PDF in `folder` through the extractor of the checkout at `code`."""
    completed = subprocess.run(
        [sys.executable, "-c", _WORKER, str(folder)],
        cwd=code,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "OPENCV_LOG_LEVEL": "ERROR"},
        capture_output=True,
        text=True,
        check=True,
    )
    raw: dict[str, list[tuple[int, list[list[str]]]]] = json.loads(completed.stdout)
    return {name: [(int(p), rows) for p, rows in tables] for name, tables in raw.items()}


def report(label: str, corpus: list[GeneratedPdf], found: dict[str, Found], verbose: bool) -> None:
    recalls: list[float] = []
    precisions: list[float] = []
    false_tables = free_pages = 0
    for generated in corpus:
        recall, precision, false = score(generated, found.get(generated.name, []))
        false_tables += false
        free_pages += len(generated.table_free_pages)
        if recall is not None and precision is not None:
            recalls.append(recall)
            precisions.append(precision)
        if verbose:
            figures = (
                f"row recall {recall:.2f} cell precision {precision:.2f}"
                if recall is not None and precision is not None
                else f"false tables {false} on {len(generated.table_free_pages)} pages"
            )
            tables = len(found.get(generated.name, []))
            print(f"  {label:6s} {generated.name:34s} tables {tables:2d}  {figures}")
    print(
        f"{label:6s} wrapped-cell tables ({len(recalls)} documents): row recall "
        f"{statistics.mean(recalls):.3f} (min {min(recalls):.2f}), cell precision "
        f"{statistics.mean(precisions):.3f} (min {min(precisions):.2f}); false tables "
        f"{false_tables} on {free_pages} table-free pages"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, help="a checkout to measure first (the before)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    corpus = wrapped_corpus()
    with tempfile.TemporaryDirectory(prefix="wrapped-tables-") as scratch:
        folder = Path(scratch)
        for generated in corpus:
            (folder / f"{generated.name}.pdf").write_bytes(generated.data)
        runs = [("before", args.base)] if args.base else []
        runs.append(("after", Path(__file__).resolve().parents[1]))
        for label, code in runs:
            report(label, corpus, extracted_tables(folder, code.resolve()), args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
