"""A key's expired issued ids are swept at most once per interval per process,
and the memory of which keys were swept is bounded."""

from __future__ import annotations

from resources.postgres.catalog_parts.reading import IssuedSweeps


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_swept_once_per_interval() -> None:
    clock = Clock()
    sweeps = IssuedSweeps(every_seconds=60, clock=clock)
    assert sweeps.due("key-a")
    assert not sweeps.due("key-a")
    assert sweeps.due("key-b")  # each key its own
    clock.now += 59
    assert not sweeps.due("key-a")
    clock.now += 1
    assert sweeps.due("key-a")


def test_the_least_recently_swept_keys_are_forgotten_first() -> None:
    clock = Clock()
    sweeps = IssuedSweeps(every_seconds=60, remembered=2, clock=clock)
    assert sweeps.due("key-a") and sweeps.due("key-b") and sweeps.due("key-c")
    assert not sweeps.due("key-b") and not sweeps.due("key-c")
    assert sweeps.due("key-a")  # forgotten: swept again at its next issue
    sweeps.forget()
    assert sweeps.due("key-b")
