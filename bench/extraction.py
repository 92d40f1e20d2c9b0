"""Extraction quality and speed per format against ground-truth Markdown.

    uv run python bench/extraction.py [--data ../shared/data/documents] [--repeat 3]

Text similarity: 1 - normalised edit distance between normalised texts (case
folded, Markdown punctuation, escapes, dot leaders and whitespace collapsed,
curly quotes as straight). Table cells: recall and precision of the ground
truth's table cells among ours (multisets of cell text normalised the same
way: in-cell list markers and emphasis are markup); precision only where the
ground truth has a table (elsewhere our tables are listed, not scored).
Throughput: pages/s for text-layer PDFs (in process, one core), s/page for
OCR. Ground truth is docling's own reviewed output (see its SOURCE.txt): a
regression reference, not gold. --legacy-scoring gives the scoring before
issue 15's changes to it, for before/after figures under both.

Then the same cell scoring on PDFs drawn from known rows (testbed/table_pdfs.py:
ruled and borderless tables, wrapped cells, a spanning header, the Senate
expenditure report) and the borderless detector's false tables per 100
table-free pages (prose, two-column prose, lists, forms, letters). The same
figures for the alternatives measured (camelot, img2table, tabula,
pdfplumber's text strategy) come from bench/table_candidates.py.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium  # noqa: E402
from rapidfuzz.distance import Levenshtein  # noqa: E402

from groundwork.documents import BlockKind, ExtractedDocument  # noqa: E402
from groundwork.extract import extract  # noqa: E402
from groundwork.render.markdown import to_markdown  # noqa: E402
from resources.inspection.sniffing import sniff_media_type  # noqa: E402
from resources.models.ocr_tesseract import TesseractOcr  # noqa: E402
from testbed.table_pdfs import generated_corpus  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "documents"
_MARKUP = re.compile(r"[#*_`|>\[\]()!\-=:]+")
_TABLE_RULE = re.compile(r"^\s*\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?\s*)?$", re.MULTILINE)
_IMAGE = re.compile(r"<!--\s*image\s*-->|!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


# Dot leaders (a contents line's ". . . . ." run to its page number) are
# typographic fill: how many dots a parser keeps, and on which side of a cell
# border a stray one lands, says nothing about the content.
_LEADER = re.compile(r"(?:(?<=\s)|^)\.(?:\s*\.){2,}(?=\s|$)|(?:^|(?<=\s))\.(?=\s|$)")
# A Markdown escape ("QIBM\\_DB") is syntax, and straight or curly quotes are
# one mark set two ways: the ground truth escapes underscores and writes
# straight quotes where the PDF has curly ones.
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_QUOTES = str.maketrans(
    {c: "'" for c in '\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u201f\u2033"'}
)
#: The scoring before leaders, escapes, quotes and in-cell markup were
#: normalised (--legacy-scoring)
LEGACY = False


def normalise(markdown: str) -> str:
    text = _IMAGE.sub(" ", markdown)
    text = _LINK.sub(r"\1", text)
    text = _TABLE_RULE.sub(" ", text)
    if not LEGACY:
        text = _LEADER.sub(" ", _ESCAPE.sub(r"\1", text).translate(_QUOTES))
    text = _MARKUP.sub(" ", text.lower())
    return " ".join(text.split())


def table_cells(markdown: str) -> Counter[str]:
    """Cells as multisets of their text, normalised as the similarity is: the
    ground truth writes in-cell Markdown (list markers, emphasis, image
    comments, leaders) that is markup, not the cell's content."""
    cells: Counter[str] = Counter()
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|") or _TABLE_RULE.match(stripped):
            continue
        for cell in re.split(r"(?<!\\)\|", stripped.strip("|")):
            value = " ".join(cell.lower().split())
            if not LEGACY:
                # a cell of markup characters alone ("*", "-") is content: kept as it is
                value = normalise(cell) or ("" if _IMAGE.fullmatch(value) else value)
            if value:
                cells[value] += 1
    return cells


def ground_truth_for(source: Path) -> Path | None:
    folder = source.parent / "groundtruth"
    for candidate in (
        folder / f"{source.name}.md",
        folder / f"{source.stem}.md",
        folder / f"{source.stem}.tesseract.full_page.md",
        folder / f"{source.stem}.nemotron_ocr.full_page.md",
    ):
        if candidate.exists():
            return candidate
    return None


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--repeat", type=int, default=3, help="time each text-layer PDF this many times (median)"
    )
    parser.add_argument(
        "--legacy-scoring",
        action="store_true",
        help="the scoring before issue 15's fixes: cells as raw lower-cased text; leaders, "
        "escapes and curly quotes as they are; precision also on documents whose ground "
        "truth has no table",
    )
    return parser.parse_args()


def scored_documents(data: Path) -> Iterator[tuple[Path, Path]]:
    """(document, its ground truth) under `data`: every file but the ground
    truth and notes themselves (Markdown counts in an `md` folder)."""
    for source in sorted(data.rglob("*")):
        if (
            not source.is_file()
            or "groundtruth" in source.parts
            or source.suffix in (".md", ".txt", ".json")
        ) and not (source.suffix == ".md" and source.parent.name == "md"):
            continue
        truth_path = ground_truth_for(source)
        if truth_path is not None:
            yield source, truth_path


Row = tuple[str, float, float | None, float | None]


@dataclass(slots=True)
class Scores:
    """Per format: (name, similarity, cell recall, cell precision) a document,
    (pages, seconds) a PDF, and the documents where we found tables the ground
    truth has none of."""

    rows: dict[str, list[Row]] = field(default_factory=lambda: defaultdict(list))
    speed: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    untabled: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def cell_scores(
    truth_cells: Counter[str], our_cells: Counter[str]
) -> tuple[float | None, float | None]:
    """Recall of the truth's cells among ours, precision of ours (None where
    there is nothing to score; see the module docstring for precision)."""
    recall = precision = None
    common = sum((truth_cells & our_cells).values())
    if truth_cells:
        recall = common / sum(truth_cells.values())
    if our_cells and (truth_cells or LEGACY):
        # precision over the cells we emitted (a document where we emit none has none)
        precision = common / sum(our_cells.values())
    return recall, precision


def score_document(
    source: Path, truth_path: Path, ocr: TesseractOcr, repeat: int, scores: Scores
) -> None:
    """One document extracted, timed and scored against its ground truth; its line printed."""
    data = source.read_bytes()
    media_type = sniff_media_type(data, source.name)
    started = time.perf_counter()
    result = extract(data, media_type, source.name, ocr=ocr)
    elapsed = time.perf_counter() - started
    fmt = source.suffix.lstrip(".").lower()
    if fmt == "pdf" and "ocr" in source.parts:
        fmt = "pdf-ocr"
    if not isinstance(result, ExtractedDocument):
        scores.rows[fmt].append((source.name, 0.0, None, None))
        print(f"  {fmt:8s} {source.name:50s} FAILED {result.reason.value}")
        return
    ours = to_markdown(result.blocks)
    truth = truth_path.read_text(errors="replace")
    similarity = Levenshtein.normalized_similarity(normalise(ours), normalise(truth))
    truth_cells, our_cells = table_cells(truth), table_cells(ours)
    recall, precision = cell_scores(truth_cells, our_cells)
    if precision is None and our_cells:
        # the reference has no table here: a table we find cannot be told
        # from one the reference missed (docling reads some drawn grids as
        # text), so it is listed, not scored; false tables are measured
        # where the truth is known, on the generated table-free pages
        tables = sum(1 for b in result.blocks if b.kind is BlockKind.TABLE)
        scores.untabled[fmt].append(f"{source.name} ({tables})")
    scores.rows[fmt].append((source.name, similarity, recall, precision))
    if fmt.startswith("pdf"):
        pages = len(pdfium.PdfDocument(data))
        if fmt == "pdf":  # a shared machine is noisy: the median of a few runs
            elapsed = statistics.median(
                [elapsed, *(_timed(data, media_type, source.name, ocr) for _ in range(1, repeat))]
            )
        scores.speed[fmt].append((pages, elapsed))
    print(
        f"  {fmt:8s} {source.name:50s} similarity {similarity:.3f}"
        + (f"  cells R {recall:.2f}" if recall is not None else "")
        + (f" P {precision:.2f}" if precision is not None else "")
    )


def print_formats(scores: Scores) -> None:
    """A row per format: files, mean similarity, cell recall and precision, speed."""
    print("\nformat    files  similarity  cell recall  cell precision  speed")
    for fmt, items in sorted(scores.rows.items()):
        sims = [s for _, s, _, _ in items]
        recalls = [r for _, _, r, _ in items if r is not None]
        precisions = [p for _, _, _, p in items if p is not None]
        speed_text = ""
        if fmt in scores.speed:
            pages = sum(p for p, _ in scores.speed[fmt])
            seconds = sum(s for _, s in scores.speed[fmt])
            speed_text = (
                f"{pages / seconds:.1f} pages/s"
                if fmt == "pdf"
                else f"{seconds / pages:.2f} s/page"
            )
        print(
            f"{fmt:8s} {len(items):6d}  {statistics.mean(sims):10.3f}  "
            f"{(statistics.mean(recalls) if recalls else float('nan')):11.2f}  "
            f"{(statistics.mean(precisions) if precisions else float('nan')):14.2f}  {speed_text}"
        )
    for fmt, names in sorted(scores.untabled.items()):
        print(f"{fmt}: tables where the ground truth has none (not scored): {', '.join(names)}")


def main() -> int:
    args = parse_args()
    global LEGACY
    LEGACY = args.legacy_scoring
    if not args.data.exists():
        print(f"no evaluation documents at {args.data}")
        return 1
    ocr = TesseractOcr()
    scores = Scores()
    for source, truth_path in scored_documents(args.data):
        score_document(source, truth_path, ocr, args.repeat, scores)
    print_formats(scores)
    generated_tables(args.repeat)
    return 0


def _timed(data: bytes, media_type: str, name: str, ocr: TesseractOcr) -> float:
    started = time.perf_counter()
    extract(data, media_type, name, ocr=ocr)
    return time.perf_counter() - started


def generated_tables(repeat: int) -> None:
    """Cells recall/precision on PDFs drawn from known rows; false tables on
    the pages that have none."""
    print("\ngenerated PDFs (testbed/table_pdfs.py)")
    recalls: list[float] = []
    precisions: list[float] = []
    false_tables = free_pages = pages = 0
    seconds = 0.0
    for generated in generated_corpus():
        times: list[float] = []
        for _ in range(max(1, repeat)):
            started = time.perf_counter()
            result = extract(generated.data, "application/pdf", f"{generated.name}.pdf")
            times.append(time.perf_counter() - started)
        seconds += statistics.median(times)
        pages += generated.pages
        free_pages += len(generated.table_free_pages)
        if not isinstance(result, ExtractedDocument):
            print(f"  {generated.name:28s} FAILED {result.reason.value}")
            continue
        tables = [b for b in result.blocks if b.kind is BlockKind.TABLE]
        false_tables += sum(1 for b in tables if b.location.page in generated.table_free_pages)
        truth_cells = table_cells(generated.truth_markdown())
        our_cells = table_cells(to_markdown(tables))
        common = sum((truth_cells & our_cells).values())
        line = f"  {generated.name:28s} tables {len(tables)}/{len(generated.tables)}"
        if truth_cells:
            recalls.append(common / sum(truth_cells.values()))
            line += f"  cells R {recalls[-1]:.2f}"
        if our_cells:
            precisions.append(common / sum(our_cells.values()))
            line += f" P {precisions[-1]:.2f}"
        print(line)
    print(
        f"generated tables: cells recall {statistics.mean(recalls):.2f} "
        f"precision {statistics.mean(precisions):.2f}; "
        f"false tables {100 * false_tables / max(1, free_pages):.1f} per 100 table-free pages "
        f"({false_tables} on {free_pages}); {pages / seconds:.1f} pages/s"
    )


if __name__ == "__main__":
    sys.exit(main())
