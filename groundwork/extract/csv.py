"""CSV with polars, after sniffing the delimiter; ragged rows are reported."""

from __future__ import annotations

import csv as stdlib_csv
from io import BytesIO, StringIO

import polars as pl

from groundwork.documents import Block, BlockKind, FailureReason, Location, Table
from groundwork.extract.base import Extracted, ExtractionContext, Refused
from groundwork.extract.text import decode_text

MAX_ROWS = 200_000
DELIMITERS = ",;\t|"


def sniff_delimiter(sample: str) -> str:
    try:
        return stdlib_csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except stdlib_csv.Error:
        counts = {d: sample.count(d) for d in DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","


def extract_csv(data: bytes, ctx: ExtractionContext) -> Extracted:
    text = decode_text(data)
    if text is None:
        raise Refused(FailureReason.MALFORMED, "the bytes are not text in any known encoding")
    delimiter = sniff_delimiter(text[:65536])
    widths = [
        len(r)
        for r in stdlib_csv.reader(StringIO(text[: 4 * 1024 * 1024]), delimiter=delimiter)
        if r
    ]
    warnings: list[str] = []
    if widths:
        expected = widths[0]
        ragged = sum(1 for w in widths if w != expected)
        if ragged:
            warnings.append(
                f"{ragged} rows have a different number of fields than the header ({expected})"
            )
    try:
        frame = pl.read_csv(
            BytesIO(text.encode("utf-8")),
            separator=delimiter,
            has_header=False,
            infer_schema=False,
            truncate_ragged_lines=True,
            n_rows=MAX_ROWS + 1,
            quote_char='"',
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        if "empty" in str(exc).lower() or isinstance(exc, pl.exceptions.NoDataError):
            return Extracted(blocks=[], warnings=["the file has no rows"])
        raise Refused(FailureReason.MALFORMED, f"not readable as CSV: {exc}") from exc
    if frame.height > MAX_ROWS:
        frame = frame.head(MAX_ROWS)
        warnings.append(f"only the first {MAX_ROWS} rows were kept")
    rows = tuple(tuple((v or "").strip() for v in row) for row in frame.iter_rows())
    rows = tuple(r for r in rows if any(r))
    if not rows:
        return Extracted(blocks=[], warnings=warnings)
    width = max(len(r) for r in rows)
    # polars pads to the widest line; trailing all-empty columns are noise
    while width > 1 and all(len(r) < width or not r[width - 1] for r in rows):
        width -= 1
    rows = tuple(r[:width] for r in rows)
    table = Table(rows=rows, header_rows=1)
    location = Location(line_start=1, line_end=len(rows))
    return Extracted(
        blocks=[Block(BlockKind.TABLE, table.to_markdown(), location, table=table)],
        warnings=warnings,
        truncated=any("only the first" in w for w in warnings),
    )
