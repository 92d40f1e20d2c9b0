"""Table finders side by side, on the shared corpus's PDFs and on the generated
tables (testbed/table_pdfs.py): cells recall/precision (the scoring of
bench/extraction.py), false tables per 100 table-free pages, and pages/s.

    uv run python bench/table_candidates.py [--data ../shared/data/documents] [--only NAME,...]

Candidates that are not installed are skipped: camelot-py (stream, network,
hybrid, lattice), img2table (borderless mode), tabula-py (tabula-java in a
JVM; each call starts one unless jpype is present), pdfplumber's text
strategy, and Groundwork's own extractor (its table blocks only). Install the
others in a scratch venv to compare; only the chosen one is a dependency.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium  # noqa: E402

from bench.extraction import DEFAULT_DATA, ground_truth_for, table_cells  # noqa: E402
from testbed.table_pdfs import generated_corpus  # noqa: E402

Found = list[tuple[int, list[list[str]]]]  # (page, rows) per table
Finder = Callable[[bytes, Path], Found]


def _markdown(tables: Found) -> str:
    out: list[str] = []
    for _, rows in tables:
        for i, row in enumerate(rows):
            out.append("| " + " | ".join(" ".join(str(c).split()) for c in row) + " |")
            if i == 0:
                out.append("| " + " | ".join("---" for _ in row) + " |")
        out.append("")
    return "\n".join(out)


def _clean(rows: list[list[object]]) -> list[list[str]]:
    out = [["" if c is None or c != c else " ".join(str(c).split()) for c in row] for row in rows]
    return [r for r in out if any(r)]


def groundwork_tables(data: bytes, path: Path) -> Found:
    from groundwork.documents import BlockKind, ExtractedDocument
    from groundwork.extract import extract

    result = extract(data, "application/pdf", path.name)
    if not isinstance(result, ExtractedDocument):
        return []
    return [
        (b.location.page or 0, [list(r) for r in b.table.rows])
        for b in result.blocks
        if b.kind is BlockKind.TABLE and b.table is not None
    ]


def pdfplumber_text(data: bytes, path: Path) -> Found:
    import pdfplumber

    found: Found = []
    settings = {"vertical_strategy": "text", "horizontal_strategy": "text"}
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for number, page in enumerate(pdf.pages, 1):
            for table in page.find_tables(table_settings=settings):
                rows = _clean(table.extract())  # type: ignore[arg-type]
                if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
                    found.append((number, rows))
    return found


def _camelot(flavor: str) -> Finder:
    def find(data: bytes, path: Path) -> Found:
        import camelot

        with contextlib.redirect_stderr(io.StringIO()):
            tables = camelot.read_pdf(str(path), pages="all", flavor=flavor, suppress_stdout=True)
        return [(int(t.page), _clean(t.df.values.tolist())) for t in tables]

    return find


def img2table_borderless(data: bytes, path: Path) -> Found:
    from img2table.document import PDF

    found: Found = []
    document = PDF(src=data, pdf_text_extraction=True)
    for page, tables in document.extract_tables(
        implicit_rows=True, implicit_columns=True, borderless_tables=True
    ).items():
        for table in tables:
            found.append((page + 1, _clean(table.df.values.tolist())))
    return found


def tabula_guess(data: bytes, path: Path) -> Found:
    import tabula

    found: Found = []
    pages = len(pdfium.PdfDocument(data))
    for number in range(1, pages + 1):
        with contextlib.redirect_stderr(io.StringIO()):
            frames = tabula.read_pdf(
                str(path), pages=number, multiple_tables=True, guess=True, silent=True
            )
        for frame in frames:
            rows = [list(frame.columns)] + frame.values.tolist()
            rows = [["" if str(c).startswith("Unnamed:") else c for c in r] for r in rows]
            found.append((number, _clean(rows)))
    return found


CANDIDATES: dict[str, Finder] = {
    "groundwork": groundwork_tables,
    "pdfplumber-text": pdfplumber_text,
    "camelot-stream": _camelot("stream"),
    "camelot-network": _camelot("network"),
    "camelot-hybrid": _camelot("hybrid"),
    "camelot-lattice": _camelot("lattice"),
    "img2table": img2table_borderless,
    "tabula": tabula_guess,
}


def corpus(data_dir: Path) -> list[tuple[str, str, Path, bytes, str, int, set[int]]]:
    """(set, name, path, bytes, truth markdown, pages, table-free pages)."""
    items: list[tuple[str, str, Path, bytes, str, int, set[int]]] = []
    folder = data_dir / "docling" / "pdf"
    scratch = Path(tempfile.mkdtemp(prefix="table-candidates-"))
    if folder.exists():
        for source in sorted(folder.glob("*.pdf")):
            truth_path = ground_truth_for(source)
            if truth_path is None:
                continue
            data = source.read_bytes()
            truth = truth_path.read_text(errors="replace")
            pages = len(pdfium.PdfDocument(data))
            # a document whose ground truth has no table: all its pages are table-free
            free = set() if table_cells(truth) else set(range(1, pages + 1))
            items.append(("shared", source.stem, source, data, truth, pages, free))
    for generated in generated_corpus():
        path = scratch / f"{generated.name}.pdf"
        path.write_bytes(generated.data)
        items.append(
            (
                "generated",
                generated.name,
                path,
                generated.data,
                generated.truth_markdown(),
                generated.pages,
                set(generated.table_free_pages),
            )
        )
    return items


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--only", default="")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    wanted = [n for n in args.only.split(",") if n] or list(CANDIDATES)
    items = corpus(args.data)
    print(
        "candidate        set        cell recall  cell precision  false tables/100 free pages  pages/s"
    )
    for name in wanted:
        finder = CANDIDATES[name]
        per_set: dict[str, tuple[list[float], list[float], int, int, int, float]] = {}
        try:
            for set_name, doc, path, data, truth, pages, free in items:
                recalls, precisions, false_tables, free_pages, all_pages, seconds = per_set.get(
                    set_name, ([], [], 0, 0, 0, 0.0)
                )
                started = time.perf_counter()
                try:
                    found = finder(data, path)
                except ImportError:
                    raise
                except Exception as exc:  # a candidate crashing on a file scores nothing there
                    print(f"  {name}: {doc}: {type(exc).__name__}: {exc}"[:200])
                    found = []
                seconds += time.perf_counter() - started
                truth_cells, our_cells = table_cells(truth), table_cells(_markdown(found))
                common = sum((truth_cells & our_cells).values())
                if truth_cells:
                    recalls.append(common / sum(truth_cells.values()))
                # as bench/extraction.py: precision where the truth has a table; a
                # table elsewhere counts among the false tables below
                if our_cells and truth_cells:
                    precisions.append(common / sum(our_cells.values()))
                false_tables += sum(1 for page, _ in found if page in free)
                if args.verbose:
                    print(
                        f"    {name} {doc}: tables {len(found)} truth cells {sum(truth_cells.values())}"
                        f" ours {sum(our_cells.values())} common {common}"
                    )
                per_set[set_name] = (
                    recalls,
                    precisions,
                    false_tables,
                    free_pages + len(free),
                    all_pages + pages,
                    seconds,
                )
        except ImportError as exc:
            print(f"{name:16s} not installed ({exc.name})")
            continue
        for set_name, (recalls, precisions, false_tables, free_pages, pages, seconds) in sorted(
            per_set.items()
        ):
            print(
                f"{name:16s} {set_name:10s} {statistics.mean(recalls) if recalls else float('nan'):11.2f}"
                f"  {statistics.mean(precisions) if precisions else float('nan'):14.2f}"
                f"  {100 * false_tables / free_pages if free_pages else float('nan'):27.1f}"
                f"  {pages / seconds:7.1f}"
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
    sys.exit(main())
