"""Render time for a 50-page report in each export format.

    uv run python bench/render.py [--pages 50]

Builds a Markdown report of sections, paragraphs and tables sized so the PDF
is about the requested page count, then renders it to Markdown, HTML, PDF and
DOCX (best of 3), and reads the PDF and DOCX back with the extraction parsers
(the fidelity check), printing each time.
"""

from __future__ import annotations

import argparse
import io
import time

from pypdf import PdfReader  # noqa: E402

from groundwork.artifact_exports import render_markdown  # noqa: E402
from groundwork.extract.markdown import markdown_blocks  # noqa: E402
from groundwork.render import ExportFormat  # noqa: E402
from groundwork.render.docx import render_docx  # noqa: E402
from groundwork.render.html import render_html  # noqa: E402
from groundwork.render.pdf import FIXED_CREATION_DATE, render_pdf  # noqa: E402

PARAGRAPH = (
    "Revenue in the region grew steadily through the quarter, driven by renewals and a "
    "handful of large new accounts; costs stayed flat while headcount rose slightly. "
)


def report(sections: int) -> str:
    parts = ["# Annual operations report", ""]
    for s in range(sections):
        parts += [
            f"## Section {s + 1}",
            "",
            PARAGRAPH * 4,
            "",
            f"### Figures for section {s + 1}",
            "",
        ]
        parts += ["| Region | Q1 | Q2 | Q3 | Q4 | Notes |", "|---|---|---|---|---|---|"]
        parts += [
            f"| Region {r} | {r * 3} | {r * 4} | {r * 5} | {r * 6} | steady |" for r in range(12)
        ]
        parts += ["", PARAGRAPH * 3, ""]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    sections = max(1, round(args.pages * 0.62))
    markdown = report(sections)
    while True:
        rendered, _ = render_markdown(markdown, ExportFormat.PDF, "Annual operations report")
        pages = len(PdfReader(io.BytesIO(rendered.data)).pages)
        if pages >= args.pages or sections > args.pages * 3:
            break
        sections += 2
        markdown = report(sections)
    print(
        f"report: {len(markdown):,} characters of Markdown, {sections} sections, {pages} PDF pages"
    )
    blocks = markdown_blocks(markdown)
    renderers = {
        ExportFormat.PDF: lambda: render_pdf("Annual operations report", blocks)[0],
        ExportFormat.DOCX: lambda: render_docx(
            "Annual operations report", blocks, FIXED_CREATION_DATE
        ),
        ExportFormat.HTML: lambda: render_html("Annual operations report", blocks),
    }
    for fmt, render in renderers.items():
        started = time.perf_counter()
        render()
        print(f"  {fmt.value:9s} render only {time.perf_counter() - started:6.2f} s")
    for fmt in ExportFormat:
        best = float("inf")
        receipt = None
        size = 0
        for _ in range(3):
            started = time.perf_counter()
            out, receipt = render_markdown(markdown, fmt, "Annual operations report")
            best = min(best, time.perf_counter() - started)
            size = len(out.data)
        check = (
            f"; read back: {receipt['checked']} items, passed {receipt['passed']}"
            if receipt
            else ""
        )
        print(
            f"  {fmt.value:9s} {best:6.2f} s  {size / 1024:8.0f} KiB (render + fidelity check){check}"
        )


if __name__ == "__main__":
    main()
