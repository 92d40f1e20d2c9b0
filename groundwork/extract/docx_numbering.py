"""The numbers Word draws before numbered paragraphs ("2.", "1.2.1", "b)").

They are not in the paragraph's text runs: Word computes them from
numbering.xml (per list level a format, a start and a pattern like "%1.%2.")
and counts as the document goes. A reader sees "step 3" and "section 2.1";
a question or a citation that names them needs them in the text. Bullets
(and levels without a pattern) yield no label: the list item says enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docx.oxml.ns import qn

_VAL = qn("w:val")
#: Levels a list may have in Word is 9; counters past this are ignored.
_LEVELS = 9
_ROMAN = (
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
)


@dataclass(frozen=True, slots=True)
class _Level:
    format: str
    pattern: str
    start: int


def _roman(value: int) -> str:
    out = []
    for amount, letters in _ROMAN:
        while value >= amount:
            out.append(letters)
            value -= amount
    return "".join(out)


def _letters(value: int) -> str:
    # Word repeats the letter past z: a..z, aa..zz, aaa..
    value = max(value, 1)
    return chr(ord("a") + (value - 1) % 26) * ((value - 1) // 26 + 1)


def _formatted(value: int, kind: str) -> str:
    if kind == "lowerLetter":
        return _letters(value)
    if kind == "upperLetter":
        return _letters(value).upper()
    if kind == "lowerRoman":
        return _roman(value) if 0 < value < 4000 else str(value)
    if kind == "upperRoman":
        return _roman(value).upper() if 0 < value < 4000 else str(value)
    if kind == "decimalZero":
        return f"{value:02d}"
    return str(value)


def _int(element: Any, default: int) -> int:
    if element is None:
        return default
    try:
        return int(element.get(_VAL))
    except (TypeError, ValueError):
        return default


@dataclass(slots=True)
class Numbering:
    """Counters for one document, fed paragraphs in reading order."""

    levels: dict[str, dict[int, _Level]] = field(default_factory=dict)  # abstractNumId -> levels
    lists: dict[str, tuple[str, dict[int, int]]] = field(
        default_factory=dict
    )  # numId -> (abstract, start overrides)
    counters: dict[str, list[int]] = field(default_factory=dict)  # abstractNumId -> per level
    restarted: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, numbering: Any) -> Numbering:
        """From the numbering part's root element (None: nothing is numbered)."""
        found = cls()
        if numbering is None:
            return found
        for abstract in numbering.iterfind(qn("w:abstractNum")):
            levels: dict[int, _Level] = {}
            for level in abstract.iterfind(qn("w:lvl")):
                ilvl = _int_attribute(level, qn("w:ilvl"))
                if ilvl is None or not 0 <= ilvl < _LEVELS:
                    continue
                kind = level.find(qn("w:numFmt"))
                pattern = level.find(qn("w:lvlText"))
                levels[ilvl] = _Level(
                    format=(kind.get(_VAL) if kind is not None else None) or "decimal",
                    pattern=(pattern.get(_VAL) if pattern is not None else None) or "",
                    start=_int(level.find(qn("w:start")), 1),
                )
            found.levels[abstract.get(qn("w:abstractNumId")) or ""] = levels
        for instance in numbering.iterfind(qn("w:num")):
            abstract_id = instance.find(qn("w:abstractNumId"))
            overrides = {}
            for override in instance.iterfind(qn("w:lvlOverride")):
                ilvl = _int_attribute(override, qn("w:ilvl"))
                start = override.find(qn("w:startOverride"))
                if ilvl is not None and start is not None:
                    overrides[ilvl] = _int(start, 1)
            found.lists[instance.get(qn("w:numId")) or ""] = (
                (abstract_id.get(_VAL) if abstract_id is not None else None) or "",
                overrides,
            )
        return found

    def label(self, num_id: str, ilvl: int) -> str | None:
        """Count the paragraph and return its drawn label, or None for a bullet
        or an unnumbered level."""
        if num_id not in self.lists or not 0 <= ilvl < _LEVELS:
            return None
        abstract, overrides = self.lists[num_id]
        levels = self.levels.get(abstract, {})
        level = levels.get(ilvl)
        if level is None:
            return None
        counters = self.counters.get(abstract)
        if counters is None or (overrides and num_id not in self.restarted):
            # A list instance that overrides its start restarts the count.
            self.restarted.add(num_id)
            counters = [
                overrides.get(i, levels[i].start if i in levels else 1) - 1 for i in range(_LEVELS)
            ]
            self.counters[abstract] = counters
        counters[ilvl] += 1
        for deeper in range(ilvl + 1, _LEVELS):
            deeper_level = levels.get(deeper)
            counters[deeper] = (deeper_level.start if deeper_level else 1) - 1
        if level.format in ("bullet", "none") or not level.pattern:
            return None
        text = level.pattern
        for i in range(ilvl + 1):
            placeholder = f"%{i + 1}"
            if placeholder in text:
                shown = levels.get(i)
                value = max(counters[i], shown.start if shown else 1)
                text = text.replace(
                    placeholder, _formatted(value, shown.format if shown else "decimal")
                )
        return text.strip() or None


def _int_attribute(element: Any, name: str) -> int | None:
    try:
        return int(element.get(name))
    except (TypeError, ValueError):
        return None
