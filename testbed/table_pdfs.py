"""PDFs with known tables, drawn with fpdf2 from CSV-like rows: the rows are the
ground truth. Used by bench/extraction.py (cells recall/precision, false tables
per 100 table-free pages) and by the tests, which must build their own fixtures.

Each generated document says which of its pages hold a table and which hold
none; the table-free pages (single-column prose, two-column prose, lists) are
where a borderless detector's false positives show: two-column prose is the
classic trap, its gutter is a column gap consistent across every line.

Deterministic: a seeded generator, no clock, no network.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from fpdf import FPDF
from fpdf.fonts import FontFace

Rows = tuple[tuple[str, ...], ...]
Rules = Literal[
    "ALL", "NONE", "HORIZONTAL_LINES", "SINGLE_TOP_LINE", "INTERNAL", "NO_HORIZONTAL_LINES"
]

_WORDS = [
    "the",
    "committee",
    "reviewed",
    "budget",
    "storage",
    "replica",
    "quarterly",
    "revenue",
    "region",
    "cost",
    "memory",
    "prices",
    "increased",
    "because",
    "hardware",
    "travel",
    "office",
    "supplies",
    "audit",
    "staff",
    "report",
    "members",
    "agreed",
    "policy",
    "record",
    "contract",
    "service",
    "period",
    "payment",
    "account",
    "balance",
    "transfer",
    "schedule",
    "vendor",
    "program",
    "annual",
    "federal",
    "state",
    "local",
    "grant",
]
_PAYEES = (
    "AMERICAN EXPRESS",
    "DELTA AIR LINES",
    "UNITED AIRLINES",
    "HILTON HOTELS",
    "STAPLES INC",
    "VERIZON WIRELESS",
    "OFFICE DEPOT",
    "MARRIOTT INTERNATIONAL",
    "AMTRAK",
    "US POSTAL SERVICE",
)
_DESCRIPTIONS = (
    "AIRFARE",
    "LODGING",
    "OFFICE SUPPLIES",
    "TELECOMMUNICATIONS",
    "RAIL FARE",
    "POSTAGE",
    "PER DIEM",
    "TAXI",
)


@dataclass(frozen=True, slots=True)
class GeneratedTable:
    page: int
    rows: Rows  # the CSV: header row(s) first; a spanning cell is followed by ""
    header_rows: int = 1


@dataclass(frozen=True, slots=True)
class GeneratedPdf:
    name: str
    data: bytes
    pages: int
    tables: tuple[GeneratedTable, ...]
    table_free_pages: tuple[int, ...]  # pages that hold no table at all

    def truth_markdown(self) -> str:
        """The tables as Markdown pipe tables, as bench/extraction.py scores them."""
        out: list[str] = []
        for table in self.tables:
            for i, row in enumerate(table.rows):
                out.append("| " + " | ".join(row) + " |")
                if i == 0:
                    out.append("| " + " | ".join("---" for _ in row) + " |")
            out.append("")
        return "\n".join(out)


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


def _money(rng: random.Random, high: float = 5000.0) -> str:
    return f"{rng.uniform(3, high):,.2f}"


def _new_pdf(landscape: bool = False) -> FPDF:
    pdf = FPDF(orientation="L" if landscape else "P", format="letter")
    pdf.set_auto_page_break(True, margin=15)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # byte-stable output
    return pdf


def _heading(pdf: FPDF, text: str) -> None:
    pdf.set_font("Helvetica", "B", 15)
    pdf.cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)


def _prose(pdf: FPDF, rng: random.Random, paragraphs: int) -> None:
    pdf.set_font("Helvetica", "", 10)
    for _ in range(paragraphs):
        pdf.multi_cell(0, 5, _paragraph(rng, 4), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)


def _table(
    pdf: FPDF,
    rows: Rows,
    rules: Rules,
    widths: tuple[float, ...] | None = None,
    numeric_from: int | None = None,
    spans: dict[tuple[int, int], int] | None = None,
    font_size: float = 10,
) -> None:
    """Rows through fpdf2's table; `spans` maps (row, column) to a colspan,
    the spanned cells being the "" that follow in the CSV."""
    pdf.set_font("Helvetica", "", font_size)
    align = tuple(
        "RIGHT" if numeric_from is not None and c >= numeric_from else "LEFT"
        for c in range(len(rows[-1]))
    )
    with pdf.table(
        borders_layout=rules,
        col_widths=widths,
        text_align=align,
        line_height=font_size * 0.5,
        headings_style=FontFace(emphasis="BOLD"),
        num_heading_rows=1 if not spans else 2,
        first_row_as_headings=True,
    ) as table:
        for r, row in enumerate(rows):
            cells = table.row()
            c = 0
            while c < len(row):
                span = (spans or {}).get((r, c), 1)
                cells.cell(row[c], colspan=span)
                c += span


def _two_columns(pdf: FPDF, rng: random.Random, paragraphs: int, justify: bool) -> None:
    pdf.set_font("Helvetica", "", 10)
    with pdf.text_columns(
        ncols=2, gutter=8, text_align="JUSTIFY" if justify else "LEFT", balance=True
    ) as columns:
        for _ in range(paragraphs):
            columns.write(_paragraph(rng, 5) + "\n\n")


def _list_page(pdf: FPDF, rng: random.Random) -> None:
    pdf.set_font("Helvetica", "", 10)
    for n in range(1, 13):
        pdf.multi_cell(
            0, 5, f"{n}. {_sentence(rng, rng.randint(4, 12))}", new_x="LMARGIN", new_y="NEXT"
        )
    pdf.ln(4)
    for _ in range(6):
        pdf.multi_cell(
            0, 5, f"- {_sentence(rng, rng.randint(3, 9))}", new_x="LMARGIN", new_y="NEXT"
        )


def _form_page(pdf: FPDF, rng: random.Random) -> None:
    """A form to fill in: labels and blank lines side by side, then prose."""
    pdf.set_font("Helvetica", "", 10)
    for label, other in (
        ("Name", "Date"),
        ("Address", "Phone"),
        ("City", "Postal code"),
        ("Signature", "Witness"),
    ):
        y = pdf.get_y()
        pdf.set_xy(20, y)
        pdf.cell(80, 6, f"{label}: ____________________")
        pdf.set_xy(110, y)
        pdf.cell(80, 6, f"{other}: ____________________", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    pdf.ln(4)
    _prose(pdf, rng, 3)


def _letter_page(pdf: FPDF, rng: random.Random) -> None:
    """A letter: sender block on the right, recipient on the left, then prose."""
    pdf.set_font("Helvetica", "", 10)
    for left, right in (
        ("Jane Example", "Office of the Treasurer"),
        ("12 Main Street", "400 State Street"),
        ("Springfield 01101", "Capital City 02201"),
        ("", "March 21, 2026"),
    ):
        y = pdf.get_y()
        pdf.set_xy(20, y)
        pdf.cell(70, 5, left)
        pdf.set_xy(140, y)
        pdf.cell(60, 5, right, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    _prose(pdf, rng, 4)


def _sparse_rows(rng: random.Random, count: int) -> Rows:
    """Empty cells: not every site reports every measure."""
    rows = [("Site", "Region", "Samples", "Positive", "Rate")]
    for n in range(count):
        samples = rng.randint(20, 900)
        positive = rng.randint(0, samples // 4)
        rows.append(
            (
                f"Site {chr(65 + n)}",
                rng.choice(("North", "South", "East", "West")) if n % 3 else "",
                str(samples),
                str(positive) if n % 4 else "",
                f"{100 * positive / samples:.1f}%" if n % 4 else "",
            )
        )
    return tuple(rows)


def _ledger_rows(rng: random.Random, count: int) -> Rows:
    header = ("Account", "Category", "Q1", "Q2", "Q3", "Q4")
    rows: list[tuple[str, ...]] = [header]
    for n in range(count):
        rows.append(
            (
                f"{4100 + n * 10}",
                rng.choice(_WORDS).title() + " " + rng.choice(_WORDS),
                *(_money(rng, 90000) for _ in range(4)),
            )
        )
    return tuple(rows)


def _project_rows(rng: random.Random, count: int) -> Rows:
    """Multi-line cells: a long description wraps inside its column."""
    rows = [("Project", "Owner", "Description", "Budget")]
    for n in range(count):
        rows.append(
            (
                f"P-{100 + n}",
                rng.choice(("Avery", "Blake", "Casey", "Devon", "Emery", "Finley")),
                _sentence(rng, rng.randint(10, 22)).rstrip("."),
                _money(rng, 250000),
            )
        )
    return tuple(rows)


def _spanning_rows(rng: random.Random, count: int) -> Rows:
    rows: list[tuple[str, ...]] = [
        ("", "Budget", "", "Actual", ""),
        ("Department", "2025", "2026", "2025", "2026"),
    ]
    for _ in range(count):
        rows.append(
            (rng.choice(_WORDS).title() + " office", *(_money(rng, 40000) for _ in range(4)))
        )
    return tuple(rows)


def senate_expenditure_rows(seed: int = 21, count: int = 40) -> Rows:
    """A Senate report of expenditures page: document number, posting date,
    travel start and end dates, payee, description, amount. Row 12 is the
    3/21 airfare a user asks about."""
    rng = random.Random(seed)
    rows: list[tuple[str, ...]] = [
        ("Document No.", "Date Posted", "Start Date", "End Date", "Payee", "Description", "Amount")
    ]
    for n in range(count):
        month, day = divmod(n, 28)
        start = f"{3 + month}/{1 + day:02d}" if n != 11 else "3/21"
        description = rng.choice(_DESCRIPTIONS) if n != 11 else "AIRFARE"
        rows.append(
            (
                f"S{2015040100 + n * 7}",
                f"04/{10 + n % 18:02d}/15",
                start,
                start if description != "LODGING" else f"{3 + month}/{min(28, 3 + day):02d}",
                rng.choice(_PAYEES) if n != 11 else "UNITED AIRLINES",
                description,
                _money(rng, 2500) if n != 11 else "1,482.60",
            )
        )
    return tuple(rows)


def senate_expenditure_pdf(seed: int = 21, count: int = 40) -> tuple[bytes, Rows]:
    """One landscape page, no ruling lines, columns placed by x as a report
    writer does (not through a table layout): the issue's user case."""
    rows = senate_expenditure_rows(seed, count)
    pdf = _new_pdf(landscape=True)
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 11)
    pdf.cell(0, 6, "REPORT OF THE SECRETARY OF THE SENATE", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 8)
    pdf.cell(
        0,
        5,
        "OFFICE OF SENATOR JANE EXAMPLE  -  Travel and expenses",
        new_x="LMARGIN",
        new_y="NEXT",
    )
    pdf.ln(2)
    xs = (12, 42, 66, 88, 110, 170, 228)
    right_edge = 262.0  # Amount is right-aligned at this x
    for r, row in enumerate(rows):
        pdf.set_font("Helvetica", "B" if r == 0 else "", 7.5)
        y = pdf.get_y()
        for c, value in enumerate(row):
            if c == len(row) - 1:
                width = pdf.get_string_width(value)
                pdf.set_xy(right_edge - width, y)
            else:
                pdf.set_xy(xs[c], y)
            pdf.cell(pdf.get_string_width(value) + 0.5, 4, value)
        pdf.set_xy(12, y + 4.1)
    pdf.ln(3)
    pdf.set_font("Helvetica", "B", 8)
    pdf.cell(0, 4, "TOTAL FOR OFFICE: see summary page", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output()), rows


def generated_corpus(seed: int = 15) -> list[GeneratedPdf]:
    """Documents covering the cases the detector must hold: ruled, borderless,
    header-rule-only, multi-line cells, numeric columns, a spanning header, the
    Senate report; and table-free pages (prose, two columns, lists)."""
    rng = random.Random(seed)
    out: list[GeneratedPdf] = []

    def single(
        name: str, rows: Rows, rules: Rules, header_rows: int = 1, **table: object
    ) -> GeneratedPdf:
        pdf = _new_pdf()
        pdf.add_page()
        _heading(pdf, name.replace("-", " ").title())
        _prose(pdf, rng, 1)
        _table(pdf, rows, rules, **table)  # type: ignore[arg-type]
        pdf.ln(4)
        _prose(pdf, rng, 1)
        return GeneratedPdf(
            name, bytes(pdf.output()), 1, (GeneratedTable(1, rows, header_rows),), ()
        )

    ledger = _ledger_rows(rng, 14)
    out.append(single("ledger-ruled", ledger, "ALL", numeric_from=2))
    out.append(single("ledger-borderless", _ledger_rows(rng, 14), "NONE", numeric_from=2))
    out.append(
        single("ledger-header-rule", _ledger_rows(rng, 10), "SINGLE_TOP_LINE", numeric_from=2)
    )
    out.append(
        single("ledger-horizontal-rules", _ledger_rows(rng, 12), "HORIZONTAL_LINES", numeric_from=2)
    )
    projects = (22.0, 22.0, 100.0, 30.0)
    out.append(
        single("projects-ruled", _project_rows(rng, 7), "ALL", widths=projects, numeric_from=3)
    )
    out.append(
        single(
            "projects-borderless", _project_rows(rng, 7), "NONE", widths=projects, numeric_from=3
        )
    )
    spans = {(0, 1): 2, (0, 3): 2}
    out.append(
        single("spanning-ruled", _spanning_rows(rng, 8), "ALL", 2, numeric_from=1, spans=spans)
    )
    out.append(
        single(
            "spanning-borderless", _spanning_rows(rng, 8), "NONE", 2, numeric_from=1, spans=spans
        )
    )
    # tight columns in a serif face: gaps of about two spaces
    pdf = _new_pdf()
    pdf.add_page()
    _heading(pdf, "Compact Ledger")
    compact = _ledger_rows(rng, 16)
    pdf.set_font("Times", "", 9)
    with pdf.table(
        borders_layout="NONE",
        col_widths=(14, 34, 19, 19, 19, 19),
        width=124,
        text_align=("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT"),
        line_height=4.5,
        padding=0.6,
        align="LEFT",
    ) as table:
        for row in compact:
            cells = table.row()
            for value in row:
                cells.cell(value)
    out.append(
        GeneratedPdf(
            "compact-borderless", bytes(pdf.output()), 1, (GeneratedTable(1, compact),), ()
        )
    )
    out.append(single("sparse-borderless", _sparse_rows(rng, 12), "NONE", numeric_from=2))
    # a small table in the right-hand column, prose running beside it on the left
    pdf = _new_pdf()
    pdf.add_page()
    _heading(pdf, "Table Beside Prose")
    top = pdf.get_y()
    pdf.set_font("Helvetica", "", 10)
    pdf.set_left_margin(10)
    pdf.multi_cell(92, 5, _paragraph(rng, 9), new_x="LMARGIN", new_y="NEXT")
    beside = _sparse_rows(rng, 9)
    pdf.set_left_margin(112)
    pdf.set_xy(112, top)
    with pdf.table(
        borders_layout="NONE",
        width=92,
        col_widths=(20, 16, 18, 18, 20),
        text_align=("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT"),
        line_height=5,
        align="LEFT",
    ) as table:
        for row in beside:
            cells = table.row()
            for value in row:
                cells.cell(value)
    out.append(
        GeneratedPdf("table-beside-prose", bytes(pdf.output()), 1, (GeneratedTable(1, beside),), ())
    )
    senate, senate_rows = senate_expenditure_pdf()
    out.append(
        GeneratedPdf("senate-expenditures", senate, 1, (GeneratedTable(1, senate_rows),), ())
    )

    # table-free pages: what a borderless detector must leave as text
    for name, draw in (
        ("prose", lambda pdf: _prose(pdf, rng, 7)),
        ("two-column-prose", lambda pdf: _two_columns(pdf, rng, 9, justify=False)),
        ("two-column-justified", lambda pdf: _two_columns(pdf, rng, 9, justify=True)),
        ("lists", lambda pdf: _list_page(pdf, rng)),
        ("forms", lambda pdf: _form_page(pdf, rng)),
        ("letters", lambda pdf: _letter_page(pdf, rng)),
    ):
        pdf = _new_pdf()
        for page in range(3):
            pdf.add_page()
            _heading(pdf, f"{name.replace('-', ' ').title()} {page + 1}")
            draw(pdf)
        pages = pdf.pages_count
        out.append(GeneratedPdf(name, bytes(pdf.output()), pages, (), tuple(range(1, pages + 1))))

    # a mixed document: prose pages around a borderless table page
    pdf = _new_pdf()
    pdf.add_page()
    _heading(pdf, "Annual Report")
    _two_columns(pdf, rng, 6, justify=True)
    pdf.add_page()
    _heading(pdf, "Ledger")
    mixed_rows = _ledger_rows(rng, 18)
    _table(pdf, mixed_rows, "NONE", numeric_from=2)
    pdf.add_page()
    _heading(pdf, "Outlook")
    _prose(pdf, rng, 6)
    out.append(
        GeneratedPdf(
            "mixed-report", bytes(pdf.output()), 3, (GeneratedTable(2, mixed_rows),), (1, 3)
        )
    )
    # rules drawn only between cells (no outer frame), and column rules without
    # row rules: a lattice of the drawn lines alone misses the outer columns or
    # holds every row in one cell
    out.append(single("ledger-internal-rules", _ledger_rows(rng, 12), "INTERNAL", numeric_from=2))
    out.append(
        single(
            "projects-internal-rules",
            _project_rows(rng, 6),
            "INTERNAL",
            widths=projects,
            numeric_from=3,
        )
    )
    out.append(
        single("ledger-column-rules", _ledger_rows(rng, 12), "NO_HORIZONTAL_LINES", numeric_from=2)
    )
    out.append(
        single(
            "projects-column-rules",
            _project_rows(rng, 6),
            "NO_HORIZONTAL_LINES",
            widths=projects,
            numeric_from=3,
        )
    )
    return out
