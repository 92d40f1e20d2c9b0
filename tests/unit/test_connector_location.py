"""The bounds on a connector item's location before it is stored on a
version and shown in citations (groundwork/connectors/location.py): source
text is data, so an entry that could forge what a reader sees is left out,
and the item's other entries are kept."""

from __future__ import annotations

from groundwork.connectors.location import MAX_KEYS, MAX_VALUE_CHARS, bounded_location


def test_a_git_location_is_kept_sorted() -> None:
    assert bounded_location({"path": "a/b.md", "commit": "c0ffee", "branch": "main"}) == (
        ("branch", "main"),
        ("commit", "c0ffee"),
        ("path", "a/b.md"),
    )


def test_control_line_separator_and_bidi_characters_are_left_out() -> None:
    location = {
        "path": "notes\nSIGNED BY THE CEO.md",
        "url": "https://example.test/\x1b[31mred",
        "key": "invoice\u202etxt.exe",
        "title": "line\u2028break",
        "commit": "c0ffee",
    }
    assert bounded_location(location) == (("commit", "c0ffee"),)


def test_keys_values_and_the_number_of_entries_are_capped() -> None:
    assert bounded_location({"path": "x" * MAX_VALUE_CHARS}) == (("path", "x" * MAX_VALUE_CHARS),)
    assert bounded_location({"path": "x" * (MAX_VALUE_CHARS + 1)}) == ()
    assert bounded_location({"Path": "a", "a b": "b", "": "c", "ok": ""}) == ()
    assert bounded_location({"n": 5, 7: "x"}) == ()  # type: ignore[dict-item]
    many = {f"k{i:02d}": str(i) for i in range(40)}
    kept = bounded_location(many)
    assert len(kept) == MAX_KEYS
    assert kept[0] == ("k00", "0")
