"""PDFs of tables whose cells wrap onto one to three lines, laid out row by
row as a report writer does (each cell a column of lines, the row as tall as
its tallest cell), with the rows as ground truth: the case where each wrapped
line used to become a row of its own (issue 36).

The layouts vary what a detector must not depend on: cells set at the top of
their row or vertically centred beside a taller neighbour; no space between
rows or some; no rules, rules under each row, a full grid, a rule under the
header only; the wrapping column first or in the middle; a table running over
pages with its header repeated (a header set in bold at body size, which a
layout reader takes for a heading). Table-free pages (prose, lists whose items
wrap under a hanging number, two columns, a letter) hold no table at all.

Deterministic: a seeded generator, a fixed creation date, no clock, no network.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from fpdf import FPDF

from testbed.pdf_drawing import PAYEES, heading, money, new_pdf, paragraph, prose, sentence
from testbed.table_pdfs import GeneratedPdf, GeneratedTable, Rows

Align = Literal["top", "middle"]
Found = list[tuple[int, list[list[str]]]]  # (page, rows) per extracted table
Lines = Literal["none", "grid", "rows", "header"]

_NAMES = (
    "Avery Example",
    "Blake Sample",
    "Casey Jordan Whitfield",
    "Devon Ray",
    "Emery Castillo Brandt",
    "Finley Ortiz",
)
_CATEGORIES = ("Travel", "Lodging", "Meals", "Supplies", "Telecom", "Training")
_PURPOSE = (
    "site visit to the northern region data centre for the storage replica audit",
    "quarterly review with the vendor about the hardware contract renewal",
    "annual conference registration and the workshop on federal grant reporting",
    "replacement laptop charger and two spare batteries for field staff",
    "hotel stay during the budget committee hearings",
    "taxi from the airport",
    "team lunch after the audit closing meeting with the state office",
    "postage for the signed contract copies",
)
_STREETS = ("Main Street", "Harbor Road", "Industrial Parkway North", "Elm Avenue", "Quarry Lane")


@dataclass(frozen=True, slots=True)
class Layout:
    widths: tuple[float, ...]
    align: Align = "top"
    lines: Lines = "none"
    padding: float = 0.0  # mm above and below each cell's text
    font_size: float = 8.5
    right_from: int | None = None  # columns from here on are right-aligned (figures)


def _fit(pdf: FPDF, text: str, width: float, most: int) -> str:
    """The text cut at a word so it wraps onto at most `most` lines."""
    words = text.split()
    while len(words) > 1 and len(_wrapped(pdf, " ".join(words), width)) > most:
        words.pop()
    return " ".join(words)


def _wrapped(pdf: FPDF, text: str, width: float) -> list[str]:
    if not text:
        return []
    lines = pdf.multi_cell(width, 4, text, dry_run=True, output="LINES", padding=0)
    assert isinstance(lines, list)
    return [str(line) for line in lines]


def expense_rows(rng: random.Random, count: int) -> Rows:
    """An expense report: the employee, merchant and purpose wrap; date,
    category and amount are one line."""
    rows: list[tuple[str, ...]] = [
        ("Date", "Employee", "Merchant", "Purpose", "Category", "Amount")
    ]
    for n in range(count):
        purpose = rng.choice(_PURPOSE)
        rows.append(
            (
                f"{1 + n % 3:02d}/{1 + (n * 3) % 28:02d}/2026",
                rng.choice(_NAMES),
                rng.choice(PAYEES + ("MARRIOTT INTERNATIONAL HOTELS AND RESORTS",)),
                " ".join(purpose.split()[: rng.randint(2, len(purpose.split()))]),
                rng.choice(_CATEGORIES),
                money(rng, 3000),
            )
        )
    return tuple(rows)


def vendor_rows(rng: random.Random, count: int) -> Rows:
    """A vendor register whose first column wraps: name, address, contract
    number, start date, value."""
    rows: list[tuple[str, ...]] = [("Vendor", "Address", "Contract", "Start", "Value")]
    for n in range(count):
        name = rng.choice(PAYEES).title() + rng.choice(("", " Regional Services", " Holdings"))
        rows.append(
            (
                name,
                f"{rng.randint(1, 990)} {rng.choice(_STREETS)}, Suite {rng.randint(1, 40)}",
                f"C-{2026000 + n * 13}",
                f"{1 + n % 12:02d}/01/2026",
                money(rng, 90000),
            )
        )
    return tuple(rows)


def _cell_lines(pdf: FPDF, rows: Rows, layout: Layout) -> list[list[list[str]]]:
    """Each row's cells as the lines they wrap onto, cut to three lines; the
    rows' texts are rewritten to what was kept (the ground truth)."""
    out: list[list[list[str]]] = []
    for row in rows:
        cells = []
        for value, width in zip(row, layout.widths, strict=True):
            kept = _fit(pdf, value, width - 3.0, 3)
            cells.append(_wrapped(pdf, kept, width - 3.0))
        out.append(cells)
    return out


def draw_wrapped_table(
    pdf: FPDF, rows: Rows, layout: Layout, first_page: int
) -> tuple[GeneratedTable, ...]:
    """The rows drawn from the current position, page after page, the header
    repeated at the top of each; one GeneratedTable per page with the rows
    printed there (cell text as wrapped, lines joined by a space)."""
    line = layout.font_size * 0.45
    bottom = pdf.h - 18
    pdf.set_font("Helvetica", "", layout.font_size)
    laid = _cell_lines(pdf, rows, layout)
    truth = [tuple(" ".join(lines) for lines in cells) for cells in laid]
    tables: list[GeneratedTable] = []
    page_rows: list[tuple[str, ...]] = []
    page = first_page
    header = laid[0]

    def row_height(cells: list[list[str]]) -> float:
        return max(1, max(len(c) for c in cells)) * line + 2 * layout.padding

    def draw_row(cells: list[list[str]], bold: bool) -> None:
        y = pdf.get_y()
        height = row_height(cells)
        x = pdf.l_margin
        pdf.set_font("Helvetica", "B" if bold else "", layout.font_size)
        for c, (lines, width) in enumerate(zip(cells, layout.widths, strict=True)):
            offset = layout.padding
            if layout.align == "middle":
                offset = (height - len(lines) * line) / 2
            for k, text in enumerate(lines):
                pdf.set_xy(x + 0.5, y + offset + k * line)
                right = layout.right_from is not None and c >= layout.right_from
                pdf.cell(width - 1.0, line, text, align="R" if right else "L")
            if layout.lines == "grid":
                pdf.rect(x, y, width, height)
            x += width
        if layout.lines == "rows" or (layout.lines == "header" and bold):
            pdf.line(pdf.l_margin, y + height, x, y + height)
        pdf.set_xy(pdf.l_margin, y + height)

    draw_row(header, bold=True)
    page_rows.append(truth[0])
    for cells, values in zip(laid[1:], truth[1:], strict=True):
        if pdf.get_y() + row_height(cells) > bottom:
            tables.append(GeneratedTable(page, tuple(page_rows)))
            pdf.add_page()
            page += 1
            draw_row(header, bold=True)
            page_rows = [truth[0]]
        draw_row(cells, bold=False)
        page_rows.append(values)
    tables.append(GeneratedTable(page, tuple(page_rows)))
    return tuple(tables)


def _wrapped_document(
    name: str, rows: Rows, layout: Layout, rng: random.Random, intro: bool = True
) -> GeneratedPdf:
    pdf = new_pdf()
    pdf.set_auto_page_break(False)
    pdf.add_page()
    heading(pdf, name.replace("-", " ").title())
    if intro:
        pdf.set_font("Helvetica", "", 10)
        pdf.multi_cell(0, 5, paragraph(rng, 2), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    tables = draw_wrapped_table(pdf, rows, layout, first_page=1)
    pdf.ln(4)
    pdf.set_font("Helvetica", "", 10)
    if pdf.get_y() < pdf.h - 40:
        pdf.multi_cell(0, 5, paragraph(rng, 2), new_x="LMARGIN", new_y="NEXT")
    return GeneratedPdf(name, bytes(pdf.output()), pdf.pages_count, tables, ())


_EXPENSE_WIDTHS = (23.0, 30.0, 36.0, 60.0, 24.0, 23.0)
_VENDOR_WIDTHS = (44.0, 58.0, 30.0, 26.0, 28.0)


def wrapped_corpus(seed: int = 36) -> list[GeneratedPdf]:
    """The scored documents: wrapped-cell tables under each layout, then the
    table-free pages."""
    rng = random.Random(seed)
    expense = Layout(_EXPENSE_WIDTHS, right_from=5)
    vendor = Layout(_VENDOR_WIDTHS, right_from=4)
    cases: list[tuple[str, Rows, Layout]] = [
        ("expenses-top-tight", expense_rows(rng, 14), expense),
        ("expenses-top-spaced", expense_rows(rng, 14), _with(expense, padding=1.2)),
        ("expenses-middle-spaced", expense_rows(rng, 14), _with(expense, "middle", padding=1.2)),
        ("expenses-middle-tight", expense_rows(rng, 14), _with(expense, "middle")),
        ("expenses-grid-middle", expense_rows(rng, 12), _with(expense, "middle", "grid", 1.0)),
        ("expenses-row-rules", expense_rows(rng, 12), _with(expense, "top", "rows", 1.0)),
        ("expenses-header-rule", expense_rows(rng, 12), _with(expense, "middle", "header", 1.0)),
        ("vendors-top-tight", vendor_rows(rng, 14), vendor),
        ("vendors-middle-spaced", vendor_rows(rng, 14), _with(vendor, "middle", padding=1.2)),
        ("expense-report-multipage", expense_rows(rng, 60), _with(expense, padding=0.8)),
        (
            "expense-report-multipage-middle",
            expense_rows(rng, 60),
            _with(expense, "middle", padding=0.8),
        ),
    ]
    out = [_wrapped_document(name, rows, layout, rng) for name, rows, layout in cases]
    out.append(statement_pdf(rng))
    out.extend(_prose_documents(rng))
    return out


def statement_pdf(rng: random.Random, count: int = 70) -> GeneratedPdf:
    """An expense statement as a report writer prints it: landscape pages,
    the office's title and period at the top of every page and "Page n" at
    the foot (furniture), the column header in bold at body size repeated on
    each page, no rules, purposes wrapping to three lines beside centred
    figures; no prose at all."""
    pdf = new_pdf(landscape=True)
    pdf.set_auto_page_break(False)

    def furniture() -> None:
        pdf.set_font("Helvetica", "B", 8.5)
        pdf.set_xy(pdf.l_margin, 8)
        pdf.cell(0, 4, "STATEMENT OF EXPENSES - OFFICE OF THE TREASURER")
        pdf.set_font("Helvetica", "", 8.5)
        pdf.set_xy(pdf.l_margin, 12)
        pdf.cell(0, 4, "Period 01/01/2026 - 03/31/2026   Cost centre 4100")
        pdf.set_xy(pdf.l_margin, pdf.h - 10)
        pdf.cell(0, 4, f"Page {pdf.page_no()}", align="R")
        pdf.set_xy(pdf.l_margin, 20)

    pdf.header = furniture  # type: ignore[method-assign]
    pdf.add_page()
    layout = Layout((23.0, 34.0, 44.0, 100.0, 30.0, 28.0), "middle", "none", 0.0, 8.5, 5)
    tables = draw_wrapped_table(pdf, expense_rows(rng, count), layout, first_page=1)
    return GeneratedPdf("expense-statement", bytes(pdf.output()), pdf.pages_count, tables, ())


def _with(
    layout: Layout, align: Align | None = None, lines: Lines | None = None, padding: float = 0.0
) -> Layout:
    return Layout(
        layout.widths,
        align or layout.align,
        lines or layout.lines,
        padding,
        layout.font_size,
        layout.right_from,
    )


def _hanging_list(pdf: FPDF, rng: random.Random) -> None:
    """Numbered items whose text wraps under itself, the number hanging to
    the left: a column of numbers beside a column of text, and no table."""
    pdf.set_font("Helvetica", "", 10)
    for n in range(1, 11):
        y = pdf.get_y()
        pdf.set_xy(pdf.l_margin, y)
        pdf.cell(8, 5, f"{n}.")
        pdf.set_xy(pdf.l_margin + 10, y)
        pdf.multi_cell(150, 5, sentence(rng, rng.randint(12, 40)), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1.5)


def _definitions(pdf: FPDF, rng: random.Random) -> None:
    """A term in bold, its definition wrapping beside it: a glossary page."""
    for term in ("Replica", "Quorum", "Ledger", "Tenant", "Snapshot", "Retention"):
        y = pdf.get_y()
        pdf.set_font("Helvetica", "B", 10)
        pdf.set_xy(pdf.l_margin, y)
        pdf.cell(30, 5, term)
        pdf.set_font("Helvetica", "", 10)
        pdf.set_xy(pdf.l_margin + 34, y)
        pdf.multi_cell(150, 5, paragraph(rng, 2), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)


def _prose_documents(rng: random.Random) -> list[GeneratedPdf]:
    out: list[GeneratedPdf] = []
    for name, draw in (
        ("wrapped-prose", lambda pdf: prose(pdf, rng, 8)),
        ("hanging-numbered-list", lambda pdf: _hanging_list(pdf, rng)),
        ("glossary", lambda pdf: _definitions(pdf, rng)),
    ):
        pdf = new_pdf()
        for page in range(2):
            pdf.add_page()
            heading(pdf, f"{name.replace('-', ' ').title()} {page + 1}")
            draw(pdf)
        pages = pdf.pages_count
        out.append(GeneratedPdf(name, bytes(pdf.output()), pages, (), tuple(range(1, pages + 1))))
    return out


def _cell(text: str) -> str:
    return " ".join(text.lower().split())


def score(generated: GeneratedPdf, found: Found) -> tuple[float | None, float | None, int]:
    """(row recall, cell precision, false tables) of one document's extracted
    tables: a truth row counts when some extracted row has every cell as
    printed; precision is over the non-empty cells extracted on the table
    pages; a table on a table-free page is a false table."""
    free = set(generated.table_free_pages)
    false_tables = sum(1 for page, _ in found if page in free)
    if not generated.tables:
        return None, None, false_tables
    truth_rows = Counter(tuple(map(_cell, r)) for t in generated.tables for r in t.rows)
    truth_cells = Counter(_cell(c) for t in generated.tables for r in t.rows for c in r if c)
    ours = [r for page, rows in found if page not in free for r in rows]
    ours_rows = Counter(tuple(map(_cell, r)) for r in ours)
    ours_cells = Counter(_cell(c) for r in ours for c in r if _cell(c))
    recall = sum((truth_rows & ours_rows).values()) / sum(truth_rows.values())
    common = sum((truth_cells & ours_cells).values())
    precision = common / sum(ours_cells.values()) if ours_cells else 0.0
    return recall, precision, false_tables
