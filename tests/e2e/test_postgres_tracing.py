"""PostgreSQL statements under tracing (issue #33, tracing overhead): a statement
in a sampled request is a span with the attributes the receiver is queried by;
one in an unsampled request (nine in ten at the default ratio) starts no span
at all. OpenTelemetry's psycopg instrumentation, used before, started a span
(non-recording, then dropped) for every statement, naming it from the rendered
statement, sampled or not (bench/postgres_tracing.py: +229 us of CPU per
checkout with two statements, against +3 us)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace import Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased

from resources.composition.platform import EngineEndpoints
from resources.composition.tracing import trace_postgres
from resources.postgres.database import open_pool
from tests.conftest import TEST_DATABASE


@pytest.fixture
def traced(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A provider of the test's own (never the global one) and psycopg patched by
    `trace_postgres` for this test only (monkeypatch restores `connect`)."""
    monkeypatch.setattr(psycopg.Connection, "connect", psycopg.Connection.__dict__["connect"])
    monkeypatch.setattr(psycopg, "connect", psycopg.connect)
    exported = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(SimpleSpanProcessor(exported))
    trace_postgres(provider)
    yield provider, exported
    provider.shutdown()


def test_a_sampled_statement_is_a_span_and_an_unsampled_one_costs_none(
    engines: EngineEndpoints,
    traced: tuple[TracerProvider, InMemorySpanExporter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider, exported = traced
    pool = open_pool(engines.database_url(TEST_DATABASE), max_size=1)
    try:
        sampled = provider.get_tracer("test")
        with sampled.start_as_current_span("sampled request"):
            with pool.connection() as conn:
                assert type(conn) is psycopg.Connection  # no proxy around it
                conn.execute("SELECT 1 AS answer").fetchone()
        spans = [s for s in exported.get_finished_spans() if s.name != "sampled request"]
        assert [s.name for s in spans] == ["SELECT"]
        attributes = dict(spans[0].attributes or {})
        assert attributes["db.system"] == "postgresql"
        assert attributes["db.statement"] == "SELECT 1 AS answer"
        assert attributes["db.name"] == TEST_DATABASE
        assert spans[0].parent is not None

        exported.clear()
        unsampled = TracerProvider(sampler=ParentBased(ALWAYS_OFF)).get_tracer("test")
        with unsampled.start_as_current_span("unsampled request") as request:
            assert not request.is_recording()
            started: list[str] = []
            start_span = Tracer.start_span

            def counted(self: Tracer, name: str, *args: Any, **kwargs: Any) -> Any:
                started.append(name)
                return start_span(self, name, *args, **kwargs)

            monkeypatch.setattr(Tracer, "start_span", counted)
            with pool.connection() as conn:
                conn.execute("SELECT 2").fetchone()
        assert started == []  # not even a non-recording span
        assert exported.get_finished_spans() == ()
    finally:
        pool.close()
