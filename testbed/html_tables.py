"""An HTML page of tables with row and column spans, a pivot table whose group
labels open rowspans on rows of their own, an infobox (a title over key-value
rows, values with line breaks and lists) and key-value rows without a title,
with the grid each must come out as: the merged text repeated in every
position it covers, as groundwork.documents.CellSpan says, and the spans.

Fixed text: no generator, no clock, no network.
"""

from __future__ import annotations

from dataclasses import dataclass

Rows = tuple[tuple[str, ...], ...]
Span = tuple[int, int, int, int]  # row, column, rows, columns


@dataclass(frozen=True, slots=True)
class HtmlTable:
    rows: Rows
    header_rows: int
    spans: tuple[Span, ...]


PAGE = """<!DOCTYPE html>
<html><head><title>Spans and an infobox</title>
<style>td { border: 1px solid } .infobox { float: right }</style></head>
<body>
<h1>Regional budget</h1>
<p>The budget by region and quarter, with the totals merged across.</p>
<table>
  <thead>
    <tr><th rowspan="2">Region</th><th colspan="2">2025</th><th colspan="2">2026</th></tr>
    <tr><th>H1</th><th>H2</th><th>H1</th><th>H2</th></tr>
  </thead>
  <tbody>
    <tr><td rowspan="2">North</td><td>120</td><td>130</td><td>140</td><td>150</td></tr>
    <tr><td colspan="2">250 (revised)</td><td>141</td><td>152</td></tr>
    <tr><td>South</td><td>90</td><td rowspan="2">95</td><td>99</td><td>101</td></tr>
    <tr><td>East</td><td>70</td><td colspan="2">pending</td></tr>
  </tbody>
</table>
<h2>Pivot</h2>
<table>
  <tr><th>Year</th><th>Quarter</th><th>Revenue</th></tr>
  <tr><th rowspan="5">2025</th><th rowspan="3">Q1</th></tr>
  <tr><td>$134</td></tr>
  <tr><td>$150</td></tr>
  <tr><th rowspan="2">Q2</th></tr>
  <tr><td>$210</td></tr>
</table>
<table class="infobox">
  <tr><th colspan="2">Ada Lovelace</th></tr>
  <tr><td colspan="2"><img src="ada.png" alt="Portrait of Ada Lovelace"></td></tr>
  <tr><th scope="row">Born</th><td>Augusta Ada Byron<br>10 December 1815<br>London, England</td></tr>
  <tr><th scope="row">Died</th><td>27 November 1852 (aged 36)</td></tr>
  <tr><th scope="row">Known for</th><td><ul><li>Analytical Engine</li><li>first program</li></ul></td></tr>
  <tr><th colspan="2">Signature</th></tr>
  <tr><th scope="row">Spouse</th><td>William King</td></tr>
</table>
<p>Her notes on the engine were published in 1843.</p>
<table>
  <tr><th>Owner</th><td>Avery Example</td></tr>
  <tr><th>Status</th><td>Open</td></tr>
  <tr><th>Due</th><td>2026-03-01</td></tr>
</table>
</body></html>
"""

TABLES = (
    HtmlTable(
        rows=(
            ("Region", "2025", "2025", "2026", "2026"),
            ("Region", "H1", "H2", "H1", "H2"),
            ("North", "120", "130", "140", "150"),
            ("North", "250 (revised)", "250 (revised)", "141", "152"),
            ("South", "90", "95", "99", "101"),
            ("East", "70", "95", "pending", "pending"),
        ),
        header_rows=2,
        spans=(
            (0, 0, 2, 1),
            (0, 1, 1, 2),
            (0, 3, 1, 2),
            (2, 0, 2, 1),
            (3, 1, 1, 2),
            (4, 2, 2, 1),
            (5, 3, 1, 2),
        ),
    ),
    HtmlTable(
        rows=(
            ("Year", "Quarter", "Revenue"),
            ("2025", "Q1", "$134"),
            ("2025", "Q1", "$150"),
            ("2025", "Q2", "$210"),
        ),
        header_rows=1,
        spans=((1, 0, 3, 1), (1, 1, 2, 1)),
    ),
    HtmlTable(
        rows=(
            ("Ada Lovelace", "Ada Lovelace"),
            ("Portrait of Ada Lovelace", "Portrait of Ada Lovelace"),
            ("Born", "Augusta Ada Byron 10 December 1815 London, England"),
            ("Died", "27 November 1852 (aged 36)"),
            ("Known for", "- Analytical Engine - first program"),
            ("Signature", "Signature"),
            ("Spouse", "William King"),
        ),
        header_rows=1,
        spans=((0, 0, 1, 2), (1, 0, 1, 2), (5, 0, 1, 2)),
    ),
    HtmlTable(
        rows=(("Owner", "Avery Example"), ("Status", "Open"), ("Due", "2026-03-01")),
        header_rows=0,
        spans=(),
    ),
)
