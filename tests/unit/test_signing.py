from __future__ import annotations

from datetime import UTC, datetime, timedelta

from groundwork.signing import MAX_LIFETIME, Reference, Refused, sign, verify

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SECRET = b"s" * 32


def test_a_reference_verifies_until_it_expires_and_lifetimes_are_clamped() -> None:
    token, expires = sign(SECRET, "acme", "src_1", "ver_1", timedelta(hours=5), NOW)
    assert expires - NOW == MAX_LIFETIME
    assert verify(SECRET, token, NOW + timedelta(minutes=14)) == Reference(
        "acme", "src_1", "ver_1", expires
    )
    assert verify(SECRET, token, NOW + timedelta(minutes=15)) == Refused("expired")


def test_forged_and_tampered_references_are_refused() -> None:
    token, _ = sign(SECRET, "acme", "src_1", "ver_1", timedelta(minutes=5), NOW)
    assert verify(b"x" * 32, token, NOW) == Refused("forged")
    payload, signature = token.split(".")
    other, _ = sign(SECRET, "globex", "src_1", "ver_1", timedelta(minutes=5), NOW)
    assert verify(SECRET, f"{other.split('.')[0]}.{signature}", NOW) == Refused("forged")
    assert verify(SECRET, "garbage", NOW) == Refused("malformed")
