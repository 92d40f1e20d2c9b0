"""The deterministic writer: structured edit proposals applied to an
artifact's Markdown to produce its next version.

Proposals (insert / replace / delete a section, update a table cell, append)
name their targets by heading text and table position, never by byte offset,
so the same proposals on the same generation always give the same result.
A proposal that would delete or overwrite existing content needs an approval
token; without it the writer refuses and says exactly what would be
destroyed, with the token that approves exactly these edits on exactly this
generation.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

MAX_EDITS = 100
MAX_BODY_CHARS = 200_000

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^(```|~~~)")


@dataclass(frozen=True, slots=True)
class InsertSection:
    heading: str
    body: str
    level: int = 2
    after: str | None = None  # insert after this section (None: at the end)
    op: Literal["insert_section"] = "insert_section"


@dataclass(frozen=True, slots=True)
class ReplaceSection:
    heading: str
    body: str
    op: Literal["replace_section"] = "replace_section"


@dataclass(frozen=True, slots=True)
class DeleteSection:
    heading: str
    op: Literal["delete_section"] = "delete_section"


@dataclass(frozen=True, slots=True)
class UpdateTableCell:
    table: int  # 0-based, in document order
    row: int  # 0 = the header row
    column: int
    value: str
    op: Literal["update_table_cell"] = "update_table_cell"


@dataclass(frozen=True, slots=True)
class Append:
    text: str
    op: Literal["append"] = "append"


Edit = InsertSection | ReplaceSection | DeleteSection | UpdateTableCell | Append


@dataclass(frozen=True, slots=True)
class EditsApplied:
    markdown: str
    summary: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EditsRefused:
    reason: Literal["approval-required", "invalid"]
    message: str
    destroys: tuple[str, ...] = ()
    digest: str | None = None  # of the refused proposal: what an approval must name


EditOutcome = EditsApplied | EditsRefused


def proposal_digest(artifact_id: str, generation: int, edits: Sequence[Edit]) -> str:
    """The artifact, the generation and the exact edits: approving one set of
    edits approves nothing else, and an approval goes stale with the generation.
    Not a secret (anyone can compute it): what proves approval is the server's
    signature over it (groundwork.approvals)."""
    canonical = json.dumps([asdict(e) for e in edits], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(f"{artifact_id}|{generation}|{canonical}".encode()).hexdigest()[:32]


@dataclass(slots=True)
class _Section:
    start: int  # line index of the heading
    end: int  # exclusive: the next heading of the same or a higher level
    level: int
    heading: str


def _sections(lines: list[str]) -> list[_Section]:
    found: list[tuple[int, int, str]] = []
    fenced = False
    for n, line in enumerate(lines):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            found.append((n, len(match.group(1)), match.group(2).strip()))
    sections = []
    for i, (start, level, heading) in enumerate(found):
        end = len(lines)
        for later_start, later_level, _ in found[i + 1 :]:
            if later_level <= level:
                end = later_start
                break
        sections.append(_Section(start, end, level, heading))
    return sections


def _find(lines: list[str], heading: str) -> _Section | EditsRefused:
    matches = [s for s in _sections(lines) if s.heading == heading]
    if not matches:
        known = ", ".join(repr(s.heading) for s in _sections(lines)[:20]) or "none"
        return EditsRefused("invalid", f"no section {heading!r}; sections: {known}")
    if len(matches) > 1:
        return EditsRefused(
            "invalid", f"{len(matches)} sections are titled {heading!r}; rename one first"
        )
    return matches[0]


def _tables(lines: list[str]) -> list[list[int]]:
    """Line indexes of each pipe table's rows (header, separator, body)."""
    tables: list[list[int]] = []
    current: list[int] = []
    for n, line in enumerate(lines + [""]):
        if line.strip().startswith("|"):
            current.append(n)
        else:
            if len(current) >= 2 and re.match(r"^\|?\s*:?-{3,}", lines[current[1]].strip()):
                tables.append(current)
            current = []
    return tables


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def _section_text(lines: list[str], section: _Section) -> str:
    return "\n".join(lines[section.start : section.end]).strip()


def _heading_line(level: int, heading: str) -> str:
    return f"{'#' * min(max(level, 1), 6)} {heading.strip()}"


def apply_edits(
    markdown: str,
    edits: Sequence[Edit],
    *,
    artifact_id: str,
    generation: int,
    approved_digest: str | None = None,
) -> EditOutcome:
    if not edits:
        return EditsRefused("invalid", "no edits proposed")
    if len(edits) > MAX_EDITS:
        return EditsRefused("invalid", f"at most {MAX_EDITS} edits per revision; split them")
    lines = markdown.splitlines()
    destroys: list[str] = []
    summary: list[str] = []
    for edit in edits:
        if isinstance(edit, InsertSection):
            new = [_heading_line(edit.level, edit.heading), "", *edit.body.strip().splitlines()]
            if edit.after is None:
                at = len(lines)
            else:
                found = _find(lines, edit.after)
                if isinstance(found, EditsRefused):
                    return found
                at = found.end
            block = ([""] if at > 0 and lines[at - 1].strip() else []) + new + [""]
            lines[at:at] = block
            summary.append(f"inserted section {edit.heading!r}")
        elif isinstance(edit, ReplaceSection | DeleteSection):
            found = _find(lines, edit.heading)
            if isinstance(found, EditsRefused):
                return found
            old = _section_text(lines, found)
            destroys.append(f"section {edit.heading!r} ({len(old)} characters): {old[:200]}")
            if isinstance(edit, ReplaceSection):
                replacement = [lines[found.start], "", *edit.body.strip().splitlines(), ""]
                lines[found.start : found.end] = replacement
                summary.append(f"replaced section {edit.heading!r}")
            else:
                del lines[found.start : found.end]
                summary.append(f"deleted section {edit.heading!r}")
        elif isinstance(edit, UpdateTableCell):
            refused = _update_cell(lines, edit, destroys)
            if refused is not None:
                return refused
            summary.append(f"updated table {edit.table} cell ({edit.row}, {edit.column})")
        else:
            lines += ["", *edit.text.strip().splitlines()]
            summary.append("appended text")
    result = "\n".join(lines).strip() + "\n"
    if len(result) > MAX_BODY_CHARS:
        return EditsRefused("invalid", f"the result would exceed {MAX_BODY_CHARS} characters")
    if destroys:
        digest = proposal_digest(artifact_id, generation, edits)
        if approved_digest != digest:
            return EditsRefused(
                "approval-required",
                "these edits delete or overwrite existing content; they need approval",
                tuple(destroys),
                digest,
            )
    return EditsApplied(result, tuple(summary))


def _update_cell(
    lines: list[str], edit: UpdateTableCell, destroys: list[str]
) -> EditsRefused | None:
    """Writes the cell in place (a Markdown pipe table, counted from 0 without
    its separator row); an overwritten value joins `destroys`."""
    tables = _tables(lines)
    if not 0 <= edit.table < len(tables):
        return EditsRefused(
            "invalid", f"table {edit.table} does not exist; the document has {len(tables)}"
        )
    rows = [n for i, n in enumerate(tables[edit.table]) if i != 1]  # skip the separator
    if not 0 <= edit.row < len(rows):
        return EditsRefused(
            "invalid",
            f"row {edit.row} does not exist; table {edit.table} has {len(rows)} rows",
        )
    cells = _cells(lines[rows[edit.row]])
    if not 0 <= edit.column < len(cells):
        return EditsRefused(
            "invalid",
            f"column {edit.column} does not exist; the row has {len(cells)} cells",
        )
    if cells[edit.column]:
        destroys.append(
            f"table {edit.table} row {edit.row} column {edit.column}: {cells[edit.column]!r}"
        )
    cells[edit.column] = edit.value.replace("|", "\\|").replace("\n", " ").strip()
    lines[rows[edit.row]] = "| " + " | ".join(cells) + " |"
    return None


def edit_from_dict(data: dict[str, object]) -> Edit:
    """Build an edit from its JSON form (`op` names the kind)."""
    kinds: dict[str, type[Edit]] = {
        "insert_section": InsertSection,
        "replace_section": ReplaceSection,
        "delete_section": DeleteSection,
        "update_table_cell": UpdateTableCell,
        "append": Append,
    }
    op = data.get("op")
    if op not in kinds:
        raise ValueError(f"unknown edit op {op!r}; one of {', '.join(kinds)}")
    return kinds[str(op)](**{k: v for k, v in data.items() if k != "op"})  # type: ignore[arg-type]
