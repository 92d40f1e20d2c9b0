"""Where a connector found a version, as a citation names it: the Git commit
and path, the page URL, the bucket and key (`SourceItem.location`).

The values come from the source (a path in somebody's repository, a URL a
crawler followed), so they are data and bounded before they are stored on the
version and shown in every citation of it: at most `MAX_KEYS` entries, keys
short lower-case names the connector chose, values at most `MAX_VALUE_CHARS`
characters with no control, line-separator or bidirectional-override
character (a path with a newline or a right-to-left override would forge what
a reader of the citation sees). An entry that breaks a rule is left out; the
item is still registered: its bytes are fine, only that entry cannot be shown.

The same bounded entries are kept on the connector's item, so an item retried
by id, or a copy settled at the end of a pass, is registered with the name
("filename") and place its listing gave.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

#: a citation's source location is a handful of fields (Git has three)
MAX_KEYS = 16
#: a URL or a deep path fits; browsers stop near 2,000 characters as well
MAX_VALUE_CHARS = 2_000
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: bidirectional embeddings, overrides and isolates: they reorder what is shown
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")

SourceLocation = tuple[tuple[str, str], ...]


def _showable(value: str) -> bool:
    return (
        0 < len(value) <= MAX_VALUE_CHARS
        and not any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value)
        and not _BIDI.intersection(value)
    )


def bounded_location(location: Mapping[str, object]) -> SourceLocation:
    """The entries of a listed item's location a citation may carry, sorted by
    key (so the same place is always the same value)."""
    kept = sorted(
        (key, value)
        for key, value in location.items()
        if isinstance(key, str) and isinstance(value, str) and _KEY.match(key) and _showable(value)
    )
    return tuple(kept[:MAX_KEYS])
