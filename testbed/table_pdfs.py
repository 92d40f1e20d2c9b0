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

from testbed.pdf_drawing import (
    DESCRIPTIONS,
    PAYEES,
    Rows,
    Rules,
    draw_table,
    fill_table,
    form_page,
    heading,
    ledger_rows,
    letter_page,
    list_page,
    money,
    new_pdf,
    paragraph,
    project_rows,
    prose,
    spanning_rows,
    sparse_rows,
    two_columns,
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
        description = rng.choice(DESCRIPTIONS) if n != 11 else "AIRFARE"
        rows.append(
            (
                f"S{2015040100 + n * 7}",
                f"04/{10 + n % 18:02d}/15",
                start,
                start if description != "LODGING" else f"{3 + month}/{min(28, 3 + day):02d}",
                rng.choice(PAYEES) if n != 11 else "UNITED AIRLINES",
                description,
                money(rng, 2500) if n != 11 else "1,482.60",
            )
        )
    return tuple(rows)


def senate_expenditure_pdf(seed: int = 21, count: int = 40) -> tuple[bytes, Rows]:
    """One landscape page, no ruling lines, columns placed by x as a report
    writer does (not through a table layout): the issue's user case."""
    rows = senate_expenditure_rows(seed, count)
    pdf = new_pdf(landscape=True)
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
        pdf = new_pdf()
        pdf.add_page()
        heading(pdf, name.replace("-", " ").title())
        prose(pdf, rng, 1)
        draw_table(pdf, rows, rules, **table)  # type: ignore[arg-type]
        pdf.ln(4)
        prose(pdf, rng, 1)
        return GeneratedPdf(
            name, bytes(pdf.output()), 1, (GeneratedTable(1, rows, header_rows),), ()
        )

    ledger = ledger_rows(rng, 14)
    out.append(single("ledger-ruled", ledger, "ALL", numeric_from=2))
    out.append(single("ledger-borderless", ledger_rows(rng, 14), "NONE", numeric_from=2))
    out.append(
        single("ledger-header-rule", ledger_rows(rng, 10), "SINGLE_TOP_LINE", numeric_from=2)
    )
    out.append(
        single("ledger-horizontal-rules", ledger_rows(rng, 12), "HORIZONTAL_LINES", numeric_from=2)
    )
    projects = (22.0, 22.0, 100.0, 30.0)
    out.append(
        single("projects-ruled", project_rows(rng, 7), "ALL", widths=projects, numeric_from=3)
    )
    out.append(
        single("projects-borderless", project_rows(rng, 7), "NONE", widths=projects, numeric_from=3)
    )
    spans = {(0, 1): 2, (0, 3): 2}
    out.append(
        single("spanning-ruled", spanning_rows(rng, 8), "ALL", 2, numeric_from=1, spans=spans)
    )
    out.append(
        single("spanning-borderless", spanning_rows(rng, 8), "NONE", 2, numeric_from=1, spans=spans)
    )
    out.append(_compact_ledger(rng))
    out.append(single("sparse-borderless", sparse_rows(rng, 12), "NONE", numeric_from=2))
    out.append(_table_beside_prose(rng))
    senate, senate_rows = senate_expenditure_pdf()
    out.append(
        GeneratedPdf("senate-expenditures", senate, 1, (GeneratedTable(1, senate_rows),), ())
    )

    out.extend(_table_free_documents(rng))

    out.append(_mixed_report(rng))
    # rules drawn only between cells (no outer frame), and column rules without
    # row rules: a lattice of the drawn lines alone misses the outer columns or
    # holds every row in one cell
    out.append(single("ledger-internal-rules", ledger_rows(rng, 12), "INTERNAL", numeric_from=2))
    variants: tuple[tuple[str, Rules], ...] = (
        ("internal-rules", "INTERNAL"),
        ("column-rules", "NO_HORIZONTAL_LINES"),
    )
    for name, rules in variants:
        if rules == "NO_HORIZONTAL_LINES":
            out.append(single(f"ledger-{name}", ledger_rows(rng, 12), rules, numeric_from=2))
        out.append(
            single(f"projects-{name}", project_rows(rng, 6), rules, widths=projects, numeric_from=3)
        )
    return out


def _compact_ledger(rng: random.Random) -> GeneratedPdf:
    """Tight columns in a serif face: gaps of about two spaces."""
    # tight columns in a serif face: gaps of about two spaces
    pdf = new_pdf()
    pdf.add_page()
    heading(pdf, "Compact Ledger")
    compact = ledger_rows(rng, 16)
    pdf.set_font("Times", "", 9)
    fill_table(
        pdf,
        compact,
        borders_layout="NONE",
        col_widths=(14, 34, 19, 19, 19, 19),
        width=124,
        text_align=("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT"),
        line_height=4.5,
        padding=0.6,
        align="LEFT",
    )
    return GeneratedPdf(
        "compact-borderless", bytes(pdf.output()), 1, (GeneratedTable(1, compact),), ()
    )


def _table_beside_prose(rng: random.Random) -> GeneratedPdf:
    """A small table in the right-hand column, prose running beside it on the left."""
    # a small table in the right-hand column, prose running beside it on the left
    pdf = new_pdf()
    pdf.add_page()
    heading(pdf, "Table Beside Prose")
    top = pdf.get_y()
    pdf.set_font("Helvetica", "", 10)
    pdf.set_left_margin(10)
    pdf.multi_cell(92, 5, paragraph(rng, 9), new_x="LMARGIN", new_y="NEXT")
    beside = sparse_rows(rng, 9)
    pdf.set_left_margin(112)
    pdf.set_xy(112, top)
    fill_table(
        pdf,
        beside,
        borders_layout="NONE",
        width=92,
        col_widths=(20, 16, 18, 18, 20),
        text_align=("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT"),
        line_height=5,
        align="LEFT",
    )
    return GeneratedPdf(
        "table-beside-prose", bytes(pdf.output()), 1, (GeneratedTable(1, beside),), ()
    )


def _table_free_documents(rng: random.Random) -> list[GeneratedPdf]:
    """Table-free pages: what a borderless detector must leave as text."""
    # table-free pages: what a borderless detector must leave as text
    out: list[GeneratedPdf] = []
    for name, draw in (
        ("prose", lambda pdf: prose(pdf, rng, 7)),
        ("two-column-prose", lambda pdf: two_columns(pdf, rng, 9, justify=False)),
        ("two-column-justified", lambda pdf: two_columns(pdf, rng, 9, justify=True)),
        ("lists", lambda pdf: list_page(pdf, rng)),
        ("forms", lambda pdf: form_page(pdf, rng)),
        ("letters", lambda pdf: letter_page(pdf, rng)),
    ):
        pdf = new_pdf()
        for page in range(3):
            pdf.add_page()
            heading(pdf, f"{name.replace('-', ' ').title()} {page + 1}")
            draw(pdf)
        pages = pdf.pages_count
        out.append(GeneratedPdf(name, bytes(pdf.output()), pages, (), tuple(range(1, pages + 1))))
    return out


def _mixed_report(rng: random.Random) -> GeneratedPdf:
    """A mixed document: prose pages around a borderless table page."""
    # a mixed document: prose pages around a borderless table page
    pdf = new_pdf()
    pdf.add_page()
    heading(pdf, "Annual Report")
    two_columns(pdf, rng, 6, justify=True)
    pdf.add_page()
    heading(pdf, "Ledger")
    mixed_rows = ledger_rows(rng, 18)
    draw_table(pdf, mixed_rows, "NONE", numeric_from=2)
    pdf.add_page()
    heading(pdf, "Outlook")
    prose(pdf, rng, 6)
    return GeneratedPdf(
        "mixed-report", bytes(pdf.output()), 3, (GeneratedTable(2, mixed_rows),), (1, 3)
    )
