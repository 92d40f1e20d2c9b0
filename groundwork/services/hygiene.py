"""Input hygiene, once, for every transport: text that PostgreSQL cannot store
(NUL) or that is not Unicode (lone surrogates) is refused naming the field,
and structures are bounded in depth, before any service runs.

Why refuse instead of cleaning: silently changing an id, a filename or a
query would make the stored value differ from what the caller believes it
sent; a refusal that names the field tells them exactly what to fix.
"""

from __future__ import annotations

import re
from typing import Any

from groundwork.errors import Refused

MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


def unsafe_text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    if _SURROGATE.search(text):
        return "contains a lone surrogate (not valid Unicode)"
    return None


def check_value(value: Any, field: str, depth: int = 0) -> None:
    """Raise Refused(invalid) naming the first unsafe field; keys are checked too."""
    if depth > MAX_DEPTH:
        raise Refused(
            f"{field} is nested more than {MAX_DEPTH} levels deep",
            "send a flatter structure",
            {"field": field},
            "invalid",
        )
    if isinstance(value, str):
        problem = unsafe_text_problem(value)
        if problem is not None:
            raise Refused(
                f"{field} {problem}",
                f"remove the character from {field} and send it again",
                {"field": field},
                "invalid",
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{field}.{key}" if field else str(key)
            if isinstance(key, str):
                check_value(key, f"{name} (the key)", depth + 1)
            check_value(item, name, depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_value(item, f"{field}[{index}]", depth + 1)


def content_disposition(filename: str) -> str:
    """An attachment header any client parses: an ASCII fallback plus RFC 5987
    `filename*` for the real name; CR, LF and quotes never reach the header."""
    from urllib.parse import quote

    base = filename.rsplit("/", 1)[-1] or "download"
    printable = "".join(c for c in base if c.isprintable() and c not in "\r\n")
    ascii_name = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;' else "_" for c in printable)
    encoded = quote(printable.encode("utf-8", "replace"), safe="")
    return f"attachment; filename=\"{ascii_name or 'download'}\"; filename*=UTF-8''{encoded}"
