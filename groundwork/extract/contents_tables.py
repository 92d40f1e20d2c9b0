"""A table of contents on a PDF page (titles, dot leaders, page numbers)
read as a two-column table before the search for other borderless tables
(text_tables.py), which would see a column gap only where the leaders stop."""

from __future__ import annotations

import re

from groundwork.documents import Table
from groundwork.extract.pdf_words import WordLine

Box = tuple[float, float, float, float]  # x0, y0, x1, y1; y grows upwards

_PAGE_NUMBER = re.compile(r"^(?:\d{1,4}|[ivxlcdm]{1,7})$", re.IGNORECASE)
_LEADER = re.compile(r"^\.+$|^…+$")


def _leader_split(line: WordLine) -> int | None:
    """Where a contents line's page number starts: the last word is a page
    number after a dot leader (three dots or more)."""
    words = line.words
    if len(words) < 3 or not _PAGE_NUMBER.match(words[-1].text):
        return None
    dots = 0
    for word in reversed(words[:-1]):
        if not _LEADER.match(word.text):
            break
        dots += len(word.text)
    return len(words) - 1 if dots >= 3 else None


def contents_tables(
    lines: list[WordLine], height: float, row_gap: float, min_rows: int
) -> tuple[list[tuple[Table, Box]], list[WordLine]]:
    """A table of contents (titles, dot leaders, page numbers) as a two-column
    table, as docling and others keep it; its lines are taken out of the
    search for other tables. The page-number column starts just left of the
    widest number, so a leader dot that reaches into it goes with the number."""
    found: list[tuple[Table, Box]] = []
    leaders = [_leader_split(line) is not None for line in lines]
    rest: list[WordLine] = []
    i = 0
    while i < len(lines):
        if not leaders[i]:
            rest.append(lines[i])
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < len(lines) and lines[run[-1]].y0 - lines[j].y1 <= row_gap * height:
            if leaders[j] or (j + 1 < len(lines) and leaders[j + 1]):
                run.append(j)
                j += 1
            else:
                break
        if sum(1 for k in run if leaders[k]) < min_rows:
            rest.extend(lines[k] for k in run)
            i = j
            continue
        start = min(lines[k].words[-1].x0 for k in run if leaders[k]) - 2.5
        rows: list[tuple[str, ...]] = []
        for k in run:
            words = lines[k].words
            title = " ".join(w.text for w in words if (w.x0 + w.x1) / 2 < start)
            number = " ".join(w.text for w in words if (w.x0 + w.x1) / 2 >= start)
            rows.append((title, number))
        box = (
            min(lines[k].x0 for k in run),
            min(lines[k].y0 for k in run),
            max(lines[k].x1 for k in run),
            max(lines[k].y1 for k in run),
        )
        row_boxes = tuple((lines[k].y0, lines[k].y1) for k in run)
        found.append((Table(rows=tuple(rows), header_rows=0, row_boxes=row_boxes), box))
        i = j
    return found, rest
