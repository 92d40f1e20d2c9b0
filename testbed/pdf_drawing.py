"""Drawing blocks for generated PDFs (fpdf2): seeded rows of several table
kinds, tables under each rule layout, and table-free pages (prose, two
columns, lists, forms, letters). `table_pdfs` builds the scored corpus from
them; tests draw their own single cases with the same blocks.

Deterministic: every function takes the caller's seeded generator.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

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
PAYEES = (
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
DESCRIPTIONS = (
    "AIRFARE",
    "LODGING",
    "OFFICE SUPPLIES",
    "TELECOMMUNICATIONS",
    "RAIL FARE",
    "POSTAGE",
    "PER DIEM",
    "TAXI",
)


def sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


def money(rng: random.Random, high: float = 5000.0) -> str:
    return f"{rng.uniform(3, high):,.2f}"


def new_pdf(landscape: bool = False) -> FPDF:
    pdf = FPDF(orientation="L" if landscape else "P", format="letter")
    pdf.set_auto_page_break(True, margin=15)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # byte-stable output
    return pdf


def heading(pdf: FPDF, text: str) -> None:
    pdf.set_font("Helvetica", "B", 15)
    pdf.cell(0, 10, text, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)


def prose(pdf: FPDF, rng: random.Random, paragraphs: int) -> None:
    pdf.set_font("Helvetica", "", 10)
    for _ in range(paragraphs):
        pdf.multi_cell(0, 5, paragraph(rng, 4), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)


def draw_table(
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


def fill_table(pdf: FPDF, rows: Sequence[Sequence[str]], **layout: Any) -> None:
    """The rows through fpdf2's table, laid out by `layout` (`FPDF.table`'s
    options), a cell per value."""
    with pdf.table(**layout) as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)


def two_columns(pdf: FPDF, rng: random.Random, paragraphs: int, justify: bool) -> None:
    pdf.set_font("Helvetica", "", 10)
    with pdf.text_columns(
        ncols=2, gutter=8, text_align="JUSTIFY" if justify else "LEFT", balance=True
    ) as columns:
        for _ in range(paragraphs):
            columns.write(paragraph(rng, 5) + "\n\n")


def list_page(pdf: FPDF, rng: random.Random) -> None:
    pdf.set_font("Helvetica", "", 10)
    for n in range(1, 13):
        pdf.multi_cell(
            0, 5, f"{n}. {sentence(rng, rng.randint(4, 12))}", new_x="LMARGIN", new_y="NEXT"
        )
    pdf.ln(4)
    for _ in range(6):
        pdf.multi_cell(0, 5, f"- {sentence(rng, rng.randint(3, 9))}", new_x="LMARGIN", new_y="NEXT")


def form_page(pdf: FPDF, rng: random.Random) -> None:
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
    prose(pdf, rng, 3)


def letter_page(pdf: FPDF, rng: random.Random) -> None:
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
    prose(pdf, rng, 4)


def sparse_rows(rng: random.Random, count: int) -> Rows:
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


def ledger_rows(rng: random.Random, count: int) -> Rows:
    header = ("Account", "Category", "Q1", "Q2", "Q3", "Q4")
    rows: list[tuple[str, ...]] = [header]
    for n in range(count):
        rows.append(
            (
                f"{4100 + n * 10}",
                rng.choice(_WORDS).title() + " " + rng.choice(_WORDS),
                *(money(rng, 90000) for _ in range(4)),
            )
        )
    return tuple(rows)


def project_rows(rng: random.Random, count: int) -> Rows:
    """Multi-line cells: a long description wraps inside its column."""
    rows = [("Project", "Owner", "Description", "Budget")]
    for n in range(count):
        rows.append(
            (
                f"P-{100 + n}",
                rng.choice(("Avery", "Blake", "Casey", "Devon", "Emery", "Finley")),
                sentence(rng, rng.randint(10, 22)).rstrip("."),
                money(rng, 250000),
            )
        )
    return tuple(rows)


def spanning_rows(rng: random.Random, count: int) -> Rows:
    rows: list[tuple[str, ...]] = [
        ("", "Budget", "", "Actual", ""),
        ("Department", "2025", "2026", "2025", "2026"),
    ]
    for _ in range(count):
        rows.append(
            (rng.choice(_WORDS).title() + " office", *(money(rng, 40000) for _ in range(4)))
        )
    return tuple(rows)
