"""Writes samples/initech/: the demo tenant that shows every kind of location
a citation can carry. Run `uv run python samples/make_initech.py` to rebuild
it; the output is committed (small, and Office formats embed timestamps, so a
rebuild differs byte-wise while its content stays the same).

- expenses-q3.pdf: a text PDF whose table rows are cited as rows
- parking-memo.pdf: a scanned page (an image, no text layer): OCR with its
  confidence, low on this poor scan, so its citations carry the flag
- security-policy.docx: headings and paragraphs
- sales-forecast.xlsx: a sheet whose citations are cell ranges
- roadmap-2027.pptx: slides, one with a chart

Everything is fictional, written for this project (CC0 1.0).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from docx import Document
from fpdf import FPDF
from openpyxl import Workbook
from PIL import Image, ImageDraw, ImageFont
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches, Pt

OUT = Path(__file__).resolve().parent / "initech"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def expenses_pdf() -> bytes:
    pdf = FPDF(format="A4")
    pdf.set_creation_date(datetime(2026, 10, 5, tzinfo=UTC))
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "Initech Q3 2026 travel and expenses", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 11)
    pdf.multi_cell(
        0,
        6,
        "Spending by category for July, August and September 2026, in US dollars.",
        new_x="LMARGIN",
        new_y="NEXT",
    )
    pdf.ln(4)
    rows = [
        ("Category", "July", "August", "September", "Total"),
        ("Airfare", "4,210", "3,980", "5,120", "13,310"),
        ("Lodging", "2,860", "3,145", "2,990", "8,995"),
        ("Team offsite", "0", "18,450", "0", "18,450"),
        ("Meals", "1,120", "1,305", "1,240", "3,665"),
        ("Ground transport", "640", "585", "710", "1,935"),
    ]
    with pdf.table(text_align=("LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT")) as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)
    pdf.ln(4)
    pdf.multi_cell(0, 6, "Approved by the finance controller on 5 October 2026.", new_x="LMARGIN")
    return bytes(pdf.output())


def parking_memo_pdf() -> bytes:
    """A page photographed at too low a resolution: the words are there, the
    recognizer is unsure of many (mean confidence ~0.64, below the 0.7 flag)."""
    width, height = 1240, 1754  # A4 at 150 dpi
    page = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype(FONT, 26)
    lines = [
        "INITECH FACILITIES MEMO",
        "",
        "To: all staff at the Elm Street office",
        "",
        "The parking garage on Elm Street closes for",
        "resurfacing from 14 October to 25 October.",
        "During the works please park in lot C behind",
        "the warehouse; shuttle buses run every ten",
        "minutes from 7:00 to 19:00.",
    ]
    y = 110
    for line in lines:
        draw.text((100, y), line, fill=60, font=font)
        y += 41
    # about a quarter of the resolution, blown up again: a poor scan, deterministically
    # (at 1/4 the recognizer is sure of most words, at 1/4.2 it reads few of them)
    low = page.resize((int(width / 4.05), int(height / 4.05)), Image.Resampling.BILINEAR)
    scan = low.resize((width, height), Image.Resampling.NEAREST)
    out = io.BytesIO()
    scan.save(out, format="PDF", resolution=150.0)
    return out.getvalue()


def security_docx() -> bytes:
    doc = Document()
    doc.core_properties.title = "Initech device security policy"
    doc.add_heading("Initech device security policy", level=1)
    doc.add_heading("Laptops", level=2)
    doc.add_paragraph(
        "Every laptop uses full-disk encryption and locks after five minutes idle. "
        "A lost or stolen laptop must be reported to security@initech.example within "
        "24 hours, even when it is found again."
    )
    doc.add_heading("Phones", level=2)
    doc.add_paragraph(
        "Work email on a personal phone requires the device management profile; "
        "it can wipe the work profile only, never the whole phone."
    )
    doc.add_heading("Travel", level=2)
    doc.add_paragraph(
        "Outside the country, use the travel loaner laptop issued by IT; "
        "return it within three working days of coming back."
    )
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def forecast_xlsx() -> bytes:
    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Forecast"
    rows = [
        ("Region", "Q1 2027", "Q2 2027", "Q3 2027", "Q4 2027"),
        ("Northeast", 410000, 455000, 470000, 520000),
        ("Southeast", 298000, 310000, 342000, 365000),
        ("Midwest", 260000, 275000, 281000, 300000),
        ("West", 515000, 560000, 598000, 640000),
    ]
    for row in rows:
        sheet.append(row)
    notes = book.create_sheet("Assumptions")
    notes.append(("Assumption", "Value"))
    notes.append(("Price increase from Q2 2027", "4%"))
    notes.append(("New West coast reseller", "from Q3 2027"))
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def roadmap_pptx() -> bytes:
    deck = Presentation()
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = "Initech product roadmap 2027"
    title.placeholders[1].text = "Product council, November 2026"
    plan = deck.slides.add_slide(deck.slide_layouts[1])
    plan.shapes.title.text = "What ships when"
    body = plan.placeholders[1].text_frame
    body.text = "Q1 2027: single sign-on for the reporting portal"
    for line in (
        "Q2 2027: the mobile approvals app for iOS and Android",
        "Q3 2027: scheduled exports to customer data warehouses",
        "Q4 2027: regional data residency in the EU",
    ):
        body.add_paragraph().text = line
    chart_slide = deck.slides.add_slide(deck.slide_layouts[5])
    chart_slide.shapes.title.text = "Support tickets per month, 2026"
    data = CategoryChartData()
    data.categories = ["Jul", "Aug", "Sep", "Oct"]
    data.add_series("Tickets", (1240, 1180, 990, 870))
    chart_slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1.6), Inches(8), Inches(4.8), data
    )
    note = chart_slide.shapes.add_textbox(Inches(1), Inches(6.5), Inches(8), Inches(0.6))
    note.text_frame.text = "Tickets fell 30% after the self-service password reset launched."
    note.text_frame.paragraphs[0].runs[0].font.size = Pt(14)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, build in (
        ("expenses-q3.pdf", expenses_pdf),
        ("parking-memo.pdf", parking_memo_pdf),
        ("security-policy.docx", security_docx),
        ("sales-forecast.xlsx", forecast_xlsx),
        ("roadmap-2027.pptx", roadmap_pptx),
    ):
        (OUT / name).write_bytes(build())
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
