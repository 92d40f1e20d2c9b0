"""A deterministic structural diff of two documents' block lists.

Sections are keyed by their heading path ("Results > Regions"), so moving
text between sections shows as a change in both; tables are compared cell by
cell by their position inside their section. Every difference carries a
location from the block model (page, lines, sheet, slide ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwork.documents import Block, BlockKind, Table

MAX_ITEMS = 500


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    text: list[str] = field(default_factory=list)
    tables: list[tuple[Table, str]] = field(default_factory=list)  # (table, location label)
    location: str = ""


def _sections(blocks: Sequence[Block]) -> dict[tuple[str, ...], _Section]:
    sections: dict[tuple[str, ...], _Section] = {}
    path: list[tuple[int, str]] = []
    current = sections.setdefault((), _Section(()))
    for block in blocks:
        if block.kind == BlockKind.HEADING:
            level = block.level or 1
            path = [(lvl, text) for lvl, text in path if lvl < level] + [
                (level, block.text.strip())
            ]
            key = tuple(text for _, text in path)
            current = sections.setdefault(key, _Section(key, location=block.location.label()))
            continue
        if not current.location:
            current.location = block.location.label()
        if block.table is not None:
            current.tables.append((block.table, block.location.label()))
        elif block.text.strip():
            current.text.append(" ".join(block.text.split()))
    if not sections[()].text and not sections[()].tables:
        del sections[()]
    return sections


def _name(path: tuple[str, ...]) -> str:
    return " > ".join(path) or "(before the first heading)"


def compare_blocks(a: Sequence[Block], b: Sequence[Block]) -> dict[str, Any]:
    left, right = _sections(a), _sections(b)
    added = [
        {
            "section": _name(k),
            "location": right[k].location,
            "untrusted_text": " ".join(right[k].text)[:500],
        }
        for k in right
        if k not in left
    ]
    removed = [
        {
            "section": _name(k),
            "location": left[k].location,
            "untrusted_text": " ".join(left[k].text)[:500],
        }
        for k in left
        if k not in right
    ]
    changed: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for key in (k for k in left if k in right):
        old, new = left[key], right[key]
        if old.text != new.text:
            gone = [t for t in old.text if t not in new.text]
            came = [t for t in new.text if t not in old.text]
            changed.append(
                {
                    "section": _name(key),
                    "location_a": old.location,
                    "location_b": new.location,
                    "untrusted_removed": gone[:20],
                    "untrusted_added": came[:20],
                }
            )
        for index in range(max(len(old.tables), len(new.tables))):
            if index >= len(old.tables) or index >= len(new.tables):
                changed.append(
                    {
                        "section": _name(key),
                        "location_a": old.location,
                        "location_b": new.location,
                        "table": index,
                        "change": "table added" if index >= len(old.tables) else "table removed",
                    }
                )
                continue
            (ta, la), (tb, lb) = old.tables[index], new.tables[index]
            for r in range(max(len(ta.rows), len(tb.rows))):
                ra = ta.rows[r] if r < len(ta.rows) else ()
                rb = tb.rows[r] if r < len(tb.rows) else ()
                for c in range(max(len(ra), len(rb))):
                    va = ra[c] if c < len(ra) else ""
                    vb = rb[c] if c < len(rb) else ""
                    if va != vb and len(cells) < MAX_ITEMS * 2:
                        cells.append(
                            {
                                "section": _name(key),
                                "table": index,
                                "row": r,
                                "column": c,
                                "untrusted_before": va,
                                "untrusted_after": vb,
                                "location_a": la,
                                "location_b": lb,
                            }
                        )
    return {
        "sections_added": added[:MAX_ITEMS],
        "sections_removed": removed[:MAX_ITEMS],
        "sections_changed": changed[:MAX_ITEMS],
        "cells_changed": cells,
        "identical": not (added or removed or changed or cells),
    }
