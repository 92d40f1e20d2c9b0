"""The numbers behind an Office chart: a DrawingML chart part (chartN.xml, the
same schema in DOCX, PPTX and XLSX) read into a table.

A chart is a picture of a table; a question about "2021 saltwater ducks" needs
the table. Every series keeps a cache of its categories and values inside the
chart part (c:cat / c:val, c:xVal / c:yVal), written by the application that
drew it, so no embedded workbook is opened. The cache is what the chart showed;
a chart whose cache is missing yields no table rather than a guessed one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lxml import etree

from groundwork.documents import Block, BlockKind, Location, Table

C = "http://schemas.openxmlformats.org/drawingml/2006/chart"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
#: The relationship type of a chart part, from the part that shows it.
CHART_RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart"
#: Bounds: a chart part is attacker-controlled XML like any other part.
MAX_SERIES = 256
MAX_POINTS = 10_000
MAX_CHART_BYTES = 16 * 1024 * 1024

_KINDS = {
    "barChart": "bar",
    "bar3DChart": "bar",
    "lineChart": "line",
    "line3DChart": "line",
    "pieChart": "pie",
    "pie3DChart": "pie",
    "ofPieChart": "pie",
    "doughnutChart": "doughnut",
    "areaChart": "area",
    "area3DChart": "area",
    "scatterChart": "scatter",
    "bubbleChart": "bubble",
    "radarChart": "radar",
    "stockChart": "stock",
    "surfaceChart": "surface",
    "surface3DChart": "surface",
}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


@dataclass(frozen=True, slots=True)
class ChartData:
    """A chart's kind ("bar", "line", ... or "combined"), title and data table
    (categories down the first column, one column per series)."""

    kind: str
    title: str | None
    table: Table
    truncated: bool = False

    @property
    def label(self) -> str:
        """The line shown above the table, saying it is chart data, not a table
        that was on the page."""
        name = f"{self.title} — " if self.title else ""
        return f"{name}{self.kind} chart data" + (" (truncated)" if self.truncated else "")


def _q(tag: str) -> str:
    return f"{{{C}}}{tag}"


def _number(text: str) -> str:
    """Cached numbers are written as doubles ("4.2999999999999998"); show the
    shortest form that reads back the same, integers without ".0"."""
    try:
        value = float(text)
    except ValueError:
        return text.strip()
    if not math.isfinite(value):
        return text.strip()
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _points(data: etree._Element | None, numeric: bool) -> dict[int, str]:
    """idx -> cached text of a c:cat / c:val / c:tx holder (str, num, multi-level
    or literal caches); the innermost level of a multi-level category."""
    points: dict[int, str] = {}
    if data is None:
        return points
    caches = [
        e
        for e in data.iter(_q("strCache"), _q("numCache"), _q("strLit"), _q("numLit"))
        if isinstance(e.tag, str)
    ]
    if not caches:
        level = next(data.iter(_q("lvl")), None)  # multiLvlStrCache: the first level is innermost
        caches = [level] if level is not None else []
    for cache in caches[:1]:
        for pt in cache.iterchildren(_q("pt")):
            try:
                idx = int(pt.get("idx") or "")
            except ValueError:
                continue
            if 0 <= idx < MAX_POINTS:
                value = pt.findtext(_q("v")) or ""
                points[idx] = _number(value) if numeric else value.strip()
    if not caches:
        literal = data.findtext(_q("v"))  # c:tx may hold a literal c:v
        if literal:
            points[0] = literal.strip()
    return points


def _rich_text(element: etree._Element | None) -> str:
    if element is None:
        return ""
    paragraphs = [
        "".join(t.text or "" for t in p.iter(f"{{{A}}}t")) for p in element.iter(f"{{{A}}}p")
    ]
    return " ".join(p.strip() for p in paragraphs if p.strip())


def read_chart(xml: bytes) -> ChartData | None:
    """The chart's data table, or None when the part holds no cached series
    (or is not a chart part at all)."""
    if len(xml) > MAX_CHART_BYTES:
        return None
    try:
        root = etree.fromstring(xml, _PARSER)
    except etree.XMLSyntaxError:
        return None
    chart = root.find(_q("chart"))
    plot_area = chart.find(_q("plotArea")) if chart is not None else None
    if chart is None or plot_area is None:
        return None
    kinds: list[str] = []
    series: list[tuple[str, dict[int, str], dict[int, str]]] = []
    truncated = False
    for plot in plot_area:
        if not isinstance(plot.tag, str):
            continue
        kind = _KINDS.get(etree.QName(plot).localname)
        if kind is None:
            continue
        if kind not in kinds:
            kinds.append(kind)
        for ser in plot.iterchildren(_q("ser")):
            if len(series) >= MAX_SERIES:
                truncated = True
                break
            name = " ".join(_points(ser.find(_q("tx")), numeric=False).values())
            categories = _points(
                ser.find(_q("cat")) if ser.find(_q("cat")) is not None else ser.find(_q("xVal")),
                numeric=kind in ("scatter", "bubble"),
            )
            values = _points(
                ser.find(_q("val")) if ser.find(_q("val")) is not None else ser.find(_q("yVal")),
                numeric=True,
            )
            series.append((name or f"Series {len(series) + 1}", categories, values))
    if not series or not any(values for _, _, values in series):
        return None
    count = max(max((max(v, default=-1) for _, _, v in series)), -1) + 1
    categories = next((c for _, c, _ in series if c), {})
    count = max(count, max(categories, default=-1) + 1)
    if count > MAX_POINTS:
        count, truncated = MAX_POINTS, True
    header = ("", *(name for name, _, _ in series))
    rows = [
        (categories.get(i, str(i + 1)), *(values.get(i, "") for _, _, values in series))
        for i in range(count)
    ]
    title = None
    title_element = chart.find(_q("title"))
    if title_element is not None:
        # a title without text of its own is Office's automatic one (the single
        # series' name), already in the table's header
        title = _rich_text(title_element.find(_q("tx"))) or None
    return ChartData(
        kind=kinds[0] if len(kinds) == 1 else "combined",
        title=title,
        table=Table(rows=(header, *rows), header_rows=1),
        truncated=truncated,
    )


def chart_blocks(chart: ChartData, location: Location) -> list[Block]:
    """A paragraph that labels the data as a chart's, then the data table, both
    at the chart's location."""
    return [
        Block(BlockKind.PARAGRAPH, chart.label, location),
        Block(BlockKind.TABLE, chart.table.to_markdown(), location, table=chart.table),
    ]
