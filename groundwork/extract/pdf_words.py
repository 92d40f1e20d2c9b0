"""Words with their boxes from a pdfium text page, grouped into the lines a
reader sees. pdfium's own line breaks follow the content stream, not the page:
a table drawn column by column comes out as one "line" per cell, so anything
that reasons about alignment (tables) regroups words by geometry first.

Only the first and last character of each word are measured (two calls a word
instead of one a character): a word's box is all the table finder needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

MAX_WORDS = 20_000  # a page with more words than this is not read for tables
#: pdfium joins a word hyphenated at a line's end and puts this in the hyphen's
#: place (its character index stays, so boxes still line up): not text
SOFT_HYPHEN = "\ufffe"
#: holds the second index of a character outside the BMP, which pdfium counts
#: as two (UTF-16) characters: not text
PAIR_TAIL = "\u200b"


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    x0: float
    y0: float  # pdfium's coordinates: y grows upwards
    x1: float
    y1: float

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass(slots=True)
class WordLine:
    """Words sharing a band of the page, left to right."""

    words: list[Word]
    y0: float
    y1: float

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)


# a glyph whose code is a control character (a bullet from a symbol font
# without a Unicode map) is no text: a space keeps the character's index
_CONTROLS = str.maketrans({c: " " for c in range(32) if chr(c) not in "\r\n\t"})


def indexed_text(textpage: pdfium.PdfTextPage) -> str:
    """The page's text with one character per pdfium character index, so a
    position in it is a position for pdfium's boxes. pdfium's own text leaves
    out characters whose code is a control character (U+0002 bullets) while
    still counting them, and a character outside the BMP counts as two: read
    by index, every box after one belonged to a later character. Such pages
    are read character by character instead.
    Control characters are kept (they tell an unreadable text layer); see
    `without_controls`."""
    text = textpage.get_text_range()
    count = textpage.count_chars()
    if len(text) == count:
        return text
    units = [pdfium_c.FPDFText_GetUnicode(textpage, i) for i in range(count)]
    out: list[str] = []
    for i, unit in enumerate(units):
        if 0xD800 <= unit < 0xDC00 and i + 1 < count and 0xDC00 <= units[i + 1] < 0xE000:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
        elif 0xDC00 <= unit < 0xE000 and out and ord(out[-1][0]) >= 0x10000:
            out.append(PAIR_TAIL)
        elif 0xD800 <= unit < 0xE000:
            out.append("\ufffd")  # half a pair: no character
        else:
            out.append(chr(unit))
    return "".join(out)


def as_text(text: str) -> str:
    """What a reader reads of page text: without pdfium's markers (the
    joined hyphen, the second half of a wide character)."""
    return text.replace(SOFT_HYPHEN, "").replace(PAIR_TAIL, "")


def without_controls(text: str) -> str:
    """Control characters (other than line breaks and tabs) as spaces: same
    length, so indices stay pdfium's."""
    return text.translate(_CONTROLS)


def page_words(textpage: pdfium.PdfTextPage, text: str | None = None) -> list[Word]:
    """Whitespace-separated words of the page with loose boxes (font ascent to
    descent, so words of one line share a band whatever their letters)."""
    if text is None:
        text = without_controls(indexed_text(textpage))
    words: list[Word] = []
    start = -1
    for index, char in enumerate([*text, " "]):
        if not char.isspace():
            if start < 0:
                start = index
            continue
        if start < 0:
            continue
        left, bottom, right, top = textpage.get_charbox(start, loose=True)
        if index - 1 > start:
            l2, b2, r2, t2 = textpage.get_charbox(index - 1, loose=True)
            left, bottom, right, top = min(left, l2), min(bottom, b2), max(right, r2), max(top, t2)
        word = as_text(text[start:index])
        if word and right > left and top > bottom:
            words.append(Word(word, left, bottom, right, top))
        start = -1
        if len(words) > MAX_WORDS:
            break
    return words


def word_lines(words: list[Word]) -> list[WordLine]:
    """Words grouped into lines, top of the page first: a word joins a line when
    its vertical middle falls inside the line's band."""
    lines: list[WordLine] = []
    for word in sorted(words, key=lambda w: -(w.y0 + w.y1) / 2):
        middle = (word.y0 + word.y1) / 2
        for line in reversed(lines[-3:]):
            if line.y0 <= middle <= line.y1:
                line.words.append(word)
                break
        else:
            lines.append(WordLine([word], word.y0, word.y1))
    for line in lines:
        line.words.sort(key=lambda w: w.x0)
    return lines
