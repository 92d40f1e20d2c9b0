"""Which items of a source a connector instance takes, and who may read them.

Shared by the listing connectors (S3 bucket, fsspec folders): a prefix, include
and exclude globs, and a prefix -> subjects map, so both kinds read a
configuration the same way and the same path is selected the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class ItemSelection:
    """Globs match the path below the prefix with `fnmatch` rules (`*` also
    crosses `/`, so `*.pdf` takes PDFs at any depth); an empty include takes
    everything; exclude wins over include. Hidden names (a segment starting
    with '.') are skipped: editors' and sync tools' droppings are not documents."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def selects(self, relative: str) -> bool:
        if any(part.startswith(".") for part in relative.split("/")):
            return False
        if self.include and not any(fnmatchcase(relative, g) for g in self.include):
            return False
        return not any(fnmatchcase(relative, g) for g in self.exclude)


@dataclass(frozen=True)
class SubjectsByPrefix:
    """Permissions for sources that have none of their own (a bucket, a
    folder): the longest matching prefix of the path below the root wins; no
    match is None, the instance's default subjects."""

    prefixes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def subjects_for(self, relative: str) -> tuple[str, ...] | None:
        best: str | None = None
        for prefix in self.prefixes:
            if relative.startswith(prefix) and (best is None or len(prefix) > len(best)):
                best = prefix
        return None if best is None else tuple(sorted(set(self.prefixes[best])))

    @classmethod
    def from_config(cls, raw: Mapping[str, Sequence[str]] | None) -> SubjectsByPrefix:
        return cls({str(k): tuple(str(s) for s in v) for k, v in (raw or {}).items()})


def subjects_from_tags(tags: Mapping[str, str], tag_key: str) -> tuple[str, ...] | None:
    """Object tags carry subjects as one tag whose value is a list separated by
    spaces, commas or '+' (S3 tag values allow no other list separator)."""
    value = tags.get(tag_key)
    if value is None:
        return None
    found = {s for s in value.replace(",", " ").replace("+", " ").split() if s}
    return tuple(sorted(found)) or None
