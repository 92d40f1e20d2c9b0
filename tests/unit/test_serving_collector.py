"""The API process's garbage collector: startup's objects are frozen out of
every later collection, and young collections run less often.

Measured before (bench/search_profile.py, 8 clients): each full collection
walked the ~240,000 objects that imports and startup made and stopped the
process for ~124 ms; young collections ran every 700 allocations, ~0.27 ms each.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient


@pytest.fixture
def collector_restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("collector_restored")
def test_serving_freezes_startup_and_collects_the_young_less_often() -> None:
    from retrieval_api.collector import YOUNG_THRESHOLD
    from retrieval_api.main import app

    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    startup_object = {"made": "before serving"}
    with TestClient(app):  # the lifespan runs; no request, so no platform is built
        assert gc.get_freeze_count() > 100_000
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert not any(o is startup_object for o in gc.get_objects())


@pytest.mark.usefixtures("collector_restored")
def test_an_app_made_for_tests_leaves_the_collector_alone() -> None:
    from retrieval_api.app import create_app

    gc.unfreeze()
    gc.set_threshold(700, 10, 10)

    def no_platform() -> object:
        raise AssertionError("no request is made")

    with TestClient(create_app(no_platform)):  # type: ignore[arg-type]
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == (700, 10, 10)
