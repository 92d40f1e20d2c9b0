"""Tables without ruling lines, found from how the words line up.

A run of lines whose words leave the same vertical strips of whitespace
("rivers") is a candidate; the rivers are its column boundaries and its lines
are regrouped into rows, a wrapped cell's lines joining the row they belong
to (wrapped_rows.py; cells set at the top of the row or centred). A wrong table is worse than none, so a candidate becomes a table
only with evidence beyond alignment: three or more columns with a numeric
column or a well-filled grid of short cells, or two columns of which one is
numeric. Two-column prose aligns just as well (its gutter is a river on every
line) and is what those rules turn away: long sentence cells, no numbers.

Before that, the page is split at a gutter with prose on both sides (a table
in one text column is not read across the other), and a table of contents
(dot leaders, page numbers) is taken as a two-column table. Inside a
candidate, a fixed-width report's dash underlines define its columns, a
header whose labels sit closer than the body's gaps is cut at the body's
gaps, and running prose in an edge column is left out.

The thresholds were chosen on testbed/table_pdfs.py's generated tables and
table-free pages and checked on the shared corpus (bench/table_candidates.py):
a column gap of 0.8 line heights is about three spaces, wider than justified
prose stretches a space and narrower than the tightest generated table's gap.
"""

from __future__ import annotations

import re
import statistics

from groundwork.documents import Table
from groundwork.extract.contents_tables import contents_tables
from groundwork.extract.pdf_words import Word, WordLine
from groundwork.extract.wrapped_rows import Row, join_wrapped

Box = tuple[float, float, float, float]  # x0, y0, x1, y1; y grows upwards

COLUMN_GAP = 0.8  # a gap wider than this many line heights separates cells
ROW_GAP = 1.5  # whitespace taller than this many line heights ends a block
MIN_ROWS = 3
#: lines holding one cell each that a block runs on through: the wrapped
#: cells of two rows set vertically centred (issue 36) put up to four between two rows
WRAPPED_LINES = 5
_NUMERIC = re.compile(
    r"^[(\-+−]?[$€£¥]?\s?(?:\d[\d,.' ]*|\.\d+)(?:[%)]|[kKmMbB]n?)?$"  # 1,234.56  (12)  45%  8.1M
    r"|^\d{1,4}[/.-]\d{1,2}(?:[/.-]\d{1,4})?$"  # 3/21  04/10/15  2026-01
    r"|^[-–—]$|^n/?a$",
    re.IGNORECASE,
)


def _segments(line: WordLine, gap: float) -> list[tuple[float, float, str]]:
    """The line's words joined into cells wherever the gap is small."""
    out: list[tuple[float, float, str]] = []
    for word in line.words:
        if out and word.x0 - out[-1][1] < gap:
            x0, _, text = out[-1]
            out[-1] = (x0, max(out[-1][1], word.x1), f"{text} {word.text}")
        else:
            out.append((word.x0, word.x1, word.text))
    return out


def is_numeric(text: str) -> bool:
    return bool(_NUMERIC.match(text.strip()))


def find_text_tables(
    lines: list[WordLine], exclude: list[Box] | None = None
) -> list[tuple[Table, Box]]:
    """Borderless tables among the page's lines (top first); words inside the
    `exclude` boxes (tables found from ruling lines) are left out."""
    if exclude:
        kept: list[WordLine] = []
        for line in lines:
            words = [w for w in line.words if not _inside(w.x0, w.y0, w.x1, w.y1, exclude)]
            if words:
                kept.append(WordLine(words, line.y0, line.y1))
        lines = kept
    if len(lines) < MIN_ROWS:
        return []
    height = statistics.median(line.y1 - line.y0 for line in lines)
    found, lines = contents_tables(lines, height, ROW_GAP, MIN_ROWS)
    gap = COLUMN_GAP * height
    segments = [_segments(line, gap) for line in lines]
    if sum(1 for s in segments if len(s) >= 2) < MIN_ROWS:
        return found  # the cheap exit: most pages have no line with a column gap
    for column in _layout_columns(lines, segments, gap):
        column_segments = [_segments(line, gap) for line in column]
        for block in _blocks(column, column_segments, height):
            found.extend(_tables_in(column, column_segments, block, gap, depth=0))
    return found


def _layout_columns(
    lines: list[WordLine], segments: list[list[tuple[float, float, str]]], gap: float
) -> list[list[WordLine]]:
    """The page's text columns. A gutter (whitespace down the page that few
    lines cross) with prose on both sides splits the page, so a table in one
    column is not read across a paragraph in the other; a full-width table
    also has gaps down the page, but no prose on both sides of them."""
    left = min(s[0] for line_segments in segments for s in line_segments)
    right = max(s[1] for line_segments in segments for s in line_segments)
    width = right - left
    if width <= 0:
        return [lines]
    cover = [0] * (int(width) + 2)
    for line_segments in segments:
        for x0, x1, _ in line_segments:
            for x in range(int(x0 - left), int(x1 - left) + 1):
                cover[x] += 1
    allowed = max(1, len(lines) // 10)
    best: tuple[int, int] | None = None
    start = None
    for x in range(int(width * 0.2), int(width * 0.8) + 1):
        if cover[x] <= allowed:
            start = x if start is None else start
            if x - start + 1 >= gap and (best is None or x - start > best[1] - best[0]):
                best = (start, x)
        else:
            start = None
    if best is None:
        return [lines]
    split = left + (best[0] + best[1]) / 2
    wide = 0.25 * width
    every = [s for line_segments in segments for s in line_segments]
    prose_left = sum(1 for s in every if s[1] < split and s[1] - s[0] >= wide)
    prose_right = sum(1 for s in every if s[0] > split and s[1] - s[0] >= wide)
    if prose_left < 5 or prose_right < 5:
        return [lines]
    halves: tuple[list[WordLine], list[WordLine]] = ([], [])
    for line in lines:
        for side, words in enumerate(
            (
                [w for w in line.words if (w.x0 + w.x1) / 2 < split],
                [w for w in line.words if (w.x0 + w.x1) / 2 >= split],
            )
        ):
            if words:
                halves[side].append(WordLine(words, line.y0, line.y1))
    return [halves[0], halves[1]]


def _inside(x0: float, y0: float, x1: float, y1: float, boxes: list[Box]) -> bool:
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return any(b[0] - 1 <= cx <= b[2] + 1 and b[1] - 1 <= cy <= b[3] + 1 for b in boxes)


def _blocks(
    lines: list[WordLine], segments: list[list[tuple[float, float, str]]], height: float
) -> list[list[int]]:
    """Runs of close lines holding at least MIN_ROWS lines with a column gap;
    lines without one are kept inside a run (wrapped cells, empty cells) but
    trimmed from its ends."""
    blocks: list[list[int]] = []
    current: list[int] = []
    single_run = 0
    for i, line in enumerate(lines):
        multi = len(segments[i]) >= 2
        if current:
            previous = lines[current[-1]]
            if previous.y0 - line.y1 > ROW_GAP * height or single_run >= WRAPPED_LINES:
                blocks.append(current)
                current = []
                single_run = 0
        if not current and not multi:
            continue
        current.append(i)
        single_run = 0 if multi else single_run + 1
    if current:
        blocks.append(current)
    out: list[list[int]] = []
    for block in blocks:
        if sum(1 for i in block if len(segments[i]) >= 2) >= MIN_ROWS:
            out.append(block)
    return out


def _rivers(
    block: list[int],
    segments: list[list[tuple[float, float, str]]],
    gap: float,
    every_line: bool = False,
) -> list[tuple[float, float]]:
    """x-intervals no cell of the block's multi-cell lines (or of all its lines)
    covers, inside the block's extent and at least a column gap wide."""
    spans = sorted(
        (s[0], s[1]) for i in block if every_line or len(segments[i]) >= 2 for s in segments[i]
    )
    rivers: list[tuple[float, float]] = []
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= gap:
            rivers.append((reach, x0))
        reach = max(reach, x1)
    return rivers


def _tables_in(
    lines: list[WordLine],
    segments: list[list[tuple[float, float, str]]],
    block: list[int],
    gap: float,
    depth: int,
) -> list[tuple[Table, Box]]:
    drawn = _drawn_columns(lines, block)
    if drawn is not None:
        # the table starts at the headings over the first dash rule: a
        # report's title lines above them are not rows
        first = next(n for n, i in enumerate(block) if _is_rule_line(lines[i]))
        block = block[max(0, first - 1) :]
        kept = [i for i in block if not _is_rule_line(lines[i])]
        table = _table(lines, segments, kept, drawn, by_words=True)
        return [] if table is None else [(table, _box(lines, block))]
    rivers = _rivers(block, segments, gap)
    # a header row's labels may sit closer than the body's columns ("Account
    # Category" in bold over "4100   Record grant"): the body's gaps stand when
    # no header word covers them, and the header is cut there by its words
    header = block[0]
    body_rivers = _rivers(block[1:], segments, gap) if len(block) > MIN_ROWS else []
    exempt: int | None = None
    if len(body_rivers) > len(rivers):
        narrowed = _narrowed(body_rivers, lines[header])
        if narrowed is not None:
            rivers, exempt = narrowed, header
    if not rivers:
        return []
    # single-cell lines after the last row: a wrapped cell's end stays, a note
    # starting in the first column (or running across the columns) does not,
    # unless it stays inside the first column right under the line above (a
    # centred first cell's last line)
    while len(segments[block[-1]]) < 2 and (
        segments[block[-1]][0][0] < rivers[0][0] or segments[block[-1]][0][1] > rivers[-1][1]
    ):
        last, above = lines[block[-1]], lines[block[-2]]
        pitch = (above.y0 + above.y1 - last.y0 - last.y1) / 2
        if segments[block[-1]][0][1] < rivers[0][0] and pitch <= 1.3 * (last.y1 - last.y0):
            break
        block = block[:-1]
    # a line with a cell across a river (a caption, a paragraph) splits the block;
    # one reaching into a river (a wrapped cell's line) narrows it below
    parts: list[list[int]] = [[]]
    for i in block:
        crosses = i != exempt and any(
            s[0] <= r0 and s[1] >= r1 for s in segments[i] for r0, r1 in rivers
        )
        if crosses:
            parts.append([])
        else:
            parts[-1].append(i)
    parts = [p for p in parts if sum(1 for i in p if len(segments[i]) >= 2) >= MIN_ROWS]
    if len(parts) != 1 or len(parts[0]) != len(block):
        if depth >= 2:
            return []
        out: list[tuple[Table, Box]] = []
        for part in parts:
            while part and len(segments[part[0]]) < 2:
                part.pop(0)
            while part and len(segments[part[-1]]) < 2:
                part.pop()
            out.extend(_tables_in(lines, segments, part, gap, depth + 1))
        return out
    rivers = _rivers([i for i in block if i != exempt], segments, gap, every_line=True)
    if not rivers:
        return []
    side = _prose_beside(lines, block, rivers)
    if side is not None:
        # look again without the prose: the table is what stands beside it
        if depth >= 3:
            return []
        cut = rivers[0] if side == 0 else rivers[-1]
        middle = (cut[0] + cut[1]) / 2
        rest: list[WordLine] = []
        for i in block:
            words = [w for w in lines[i].words if ((w.x0 + w.x1) / 2 < middle) == (side != 0)]
            if words:
                rest.append(WordLine(words, lines[i].y0, lines[i].y1))
        rest_segments = [_segments(line, gap) for line in rest]
        part = [i for i in range(len(rest))]
        while part and len(rest_segments[part[0]]) < 2:
            part.pop(0)
        if sum(1 for i in part if len(rest_segments[i]) >= 2) < MIN_ROWS:
            return []
        return _tables_in(rest, rest_segments, part, gap, depth + 1)
    table = _table(lines, segments, block, rivers, by_words=True)
    return [] if table is None else [(table, _box(lines, block))]


def _prose_beside(
    lines: list[WordLine], block: list[int], rivers: list[tuple[float, float]]
) -> int | None:
    """0 or -1 when the first or last column is running prose that merely
    shares the table's lines (a text column beside a table): nearly every line
    holds five words or more there, no figures, and the text carries on above
    or below the table in that column alone."""
    for side, (r0, r1) in ((0, rivers[0]), (-1, rivers[-1])):
        middle = (r0 + r1) / 2

        def inside(word: Word, side: int = side, middle: float = middle) -> bool:
            return ((word.x0 + word.x1) / 2 < middle) == (side == 0)

        texts = [[w.text for w in lines[i].words if inside(w)] for i in block]
        filled = [t for t in texts if t]
        if len(filled) < 0.8 * len(block) or sum(map(len, filled)) < 5 * len(filled):
            continue
        if any(is_numeric(" ".join(t)) for t in filled):
            continue
        for j, near in ((block[0] - 1, block[0]), (block[-1] + 1, block[-1])):
            if not 0 <= j < len(lines):
                continue
            other, line = lines[j], lines[near]
            distance = max(other.y0 - line.y1, line.y0 - other.y1)
            if distance <= ROW_GAP * (line.y1 - line.y0) and all(inside(w) for w in other.words):
                return side
    return None


def _narrowed(
    rivers: list[tuple[float, float]], line: WordLine
) -> list[tuple[float, float]] | None:
    """The rivers cut down to the line's own spaces between words, or None if
    a word of the line covers one of them."""
    words = line.words
    spaces = [(a.x1, b.x0) for a, b in zip(words, words[1:], strict=False) if b.x0 > a.x1]
    spaces = [(float("-inf"), words[0].x0), *spaces, (words[-1].x1, float("inf"))]
    out: list[tuple[float, float]] = []
    for r0, r1 in rivers:
        best = max(((max(r0, s0), min(r1, s1)) for s0, s1 in spaces), key=lambda r: r[1] - r[0])
        if best[1] - best[0] < 0.5:
            return None
        out.append(best)
    return out


def _box(lines: list[WordLine], block: list[int]) -> Box:
    return (
        min(lines[i].x0 for i in block),
        min(lines[i].y0 for i in block),
        max(lines[i].x1 for i in block),
        max(lines[i].y1 for i in block),
    )


_RULE = re.compile(r"^[-_=]{3,}$")


def _is_rule_line(line: WordLine) -> bool:
    return len(line.words) >= 2 and all(_RULE.match(w.text) for w in line.words)


def _drawn_columns(lines: list[WordLine], block: list[int]) -> list[tuple[float, float]] | None:
    """A fixed-width report underlines each column heading with a run of
    dashes: those runs are the columns, however narrow the gaps between them."""
    for i in block:
        line = lines[i]
        if _is_rule_line(line):
            return [(a.x1, b.x0) for a, b in zip(line.words, line.words[1:], strict=False)]
    return None


def _table(
    lines: list[WordLine],
    segments: list[list[tuple[float, float, str]]],
    block: list[int],
    rivers: list[tuple[float, float]],
    by_words: bool = False,
) -> Table | None:
    columns = len(rivers) + 1
    rows: list[Row] = []
    for i in block:
        cells: list[list[str]] = [[] for _ in range(columns)]
        if by_words:
            for word in lines[i].words:
                middle = (word.x0 + word.x1) / 2
                cells[sum(1 for r0, r1 in rivers if (r0 + r1) / 2 < middle)].append(word.text)
        else:
            for x0, _, text in segments[i]:
                column = sum(1 for r0, _ in rivers if r0 < x0)
                cells[column].append(text)
        rows.append(Row([lines[i]], cells))
    header_rows = _header_rows(rows, columns)
    rows = join_wrapped(rows, columns, header_rows, is_numeric)
    if not _has_evidence(rows, columns, header_rows):
        return None
    return Table(
        rows=tuple(tuple(" ".join(c) for c in row.cells) for row in rows),
        header_rows=header_rows,
        # each row's lines, wrapped ones included: a chunk of rows cites their box
        row_boxes=tuple(
            (min(line.y0 for line in row.lines), max(line.y1 for line in row.lines)) for row in rows
        ),
    )


def _header_rows(rows: list[Row], columns: int) -> int:
    return header_rows_of([tuple(" ".join(c) for c in row.cells) for row in rows])


def header_rows_of(rows: list[tuple[str, ...]]) -> int:
    """One header row; two when the first is a spanning group header (cells
    left empty under its spans, no numbers) over a full row of labels; none
    when the first row is shaped like the body (numbers where the body has
    them, years aside: "2025" heads a column of figures)."""
    if _first_row_is_body(rows):
        return 0
    if len(rows) > 3:
        columns = max(len(r) for r in rows)
        first = [c for c in rows[0] if c]
        second = [c for c in rows[1] if c]
        spanning = first and len(first) <= columns / 2 and len(second) >= columns - 1
        if spanning and not any(is_numeric(t) for t in first):
            return 2
    return 1


_YEAR = re.compile(r"^(?:19|20)\d\d$")


def _first_row_is_body(rows: list[tuple[str, ...]]) -> bool:
    if len(rows) < 3:
        return False

    def shape(row: tuple[str, ...]) -> tuple[bool, ...]:
        return tuple(bool(c) and is_numeric(c) for c in row)

    first = shape(rows[0])
    if not any(first) or any(_YEAR.match(c.strip()) for c in rows[0] if c):
        return False
    same = sum(1 for row in rows[1:] if shape(row) == first)
    return same >= 0.6 * (len(rows) - 1)


def _has_evidence(rows: list[Row], columns: int, header_rows: int) -> bool:
    body = rows[header_rows:]
    if len(rows) < MIN_ROWS or len(body) < 2 or columns < 2:
        return False
    cells = [" ".join(c) for row in rows for c in row.cells]
    filled = [c for c in cells if c]
    fill = len(filled) / len(cells)
    if fill < 0.5:
        return False
    # every column holds something in a fair share of the rows
    for column in range(columns):
        if sum(1 for row in rows if row.cells[column]) < max(2, 0.25 * len(rows)):
            return False
    numeric_columns = 0
    for column in range(columns):
        values = [" ".join(row.cells[column]) for row in body if row.cells[column]]
        if len(values) >= 2 and sum(1 for v in values if is_numeric(v)) >= 0.6 * len(values):
            numeric_columns += 1
    long_cells = sum(1 for c in filled if len(c) > 40 or c.endswith((".", ";", ","))) / len(filled)
    if long_cells > 0.5:
        return False  # sentences side by side: columns of prose, not a table
    if columns >= 3:
        return numeric_columns >= 1 or (fill >= 0.75 and long_cells < 0.2)
    return numeric_columns >= 1 and fill >= 0.8 and long_cells < 0.2
