"""Traces (issue #33): a search through the served API, with tracing on, lands
in a real receiver (Jaeger, built by ./run, started here under the test home)
as one trace holding the request span, the service span, both legs and the
engine calls (PostgreSQL under the vector leg, OpenSearch under the keyword
leg), tagged with the tenant; the JSON request line carries the same trace id.
With tracing off, nothing reaches the receiver. A Dagster run is one trace
too: the run span and a span per step, from Dagster's record of them."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from groundwork.stages.registration import register_file
from pipelines.definitions import ALL_ASSETS
from pipelines.run_traces import export_finished_runs
from resources.composition.platform import Platform
from resources.engines.jaeger import EmbeddedJaeger
from testbed.api_server import serve_api
from tests.conftest import TEST_DATABASE
from tests.e2e.helpers import publish_registered, resource, write_inbox

SERVICE = "groundwork-api"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedJaeger]:
    receiver = EmbeddedJaeger(
        tmp_path_factory.mktemp("jaeger"),
        otlp_port=_free_port(),
        query_port=_free_port(),
        query_grpc_port=_free_port(),
    )
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.fixture
def searchable(platform: Platform, tenant_id: str) -> str:
    """The tenant's key, with one published note both legs find."""
    register_file(
        platform.catalog,
        platform.blobs,
        tenant_id=tenant_id,
        origin=f"inbox://{tenant_id}/heron.md",
        filename="heron.md",
        data=b"# Herons\n\nThe grey heron waits motionless in shallow water to catch fish.\n",
        subjects=[f"tenant:{tenant_id}"],
        media_type="text/markdown",
    )
    publish_registered(platform, tenant_id)
    _, key = platform.catalog.create_api_key(tenant_id, [f"tenant:{tenant_id}"], "reader")
    return key


def _search(base: str, key: str, request_id: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/search",
        json={"query": "grey heron fish"},
        headers={"Authorization": f"Bearer {key}", "X-Request-Id": request_id},
        timeout=60,
    )


def _served_env(extra: dict[str, str]) -> dict[str, str]:
    return {"GROUNDWORK_ENGINES_MANAGED": "1", **extra}


def _tags(span: dict[str, Any]) -> dict[str, Any]:
    return {t["key"]: t["value"] for t in span.get("tags", [])}


def _ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[str]:
    names: list[str] = []
    while True:
        parents = [r["spanID"] for r in span.get("references", []) if r["refType"] == "CHILD_OF"]
        if not parents or parents[0] not in by_id:
            return names
        span = by_id[parents[0]]
        names.append(span["operationName"])


def test_a_search_is_one_trace_from_request_to_engines(
    platform: Platform,
    tenant_id: str,
    searchable: str,
    index_prefix: str,
    jaeger: EmbeddedJaeger,
    capfd: pytest.CaptureFixture[str],
) -> None:
    request_id = f"test-{uuid.uuid4().hex}"
    env = _served_env(
        {"GROUNDWORK_OTLP_ENDPOINT": jaeger.otlp_endpoint, "GROUNDWORK_TRACE_SAMPLE_RATIO": "1"},
    )
    with serve_api(_free_port(), TEST_DATABASE, index_prefix, extra_env=env) as base:
        answered = _search(base, searchable, request_id)
        assert answered.status_code == 200, answered.text
        assert answered.json()["hits"], answered.json()
        assert answered.headers["x-request-id"] == request_id
        traces: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while not traces and time.monotonic() < deadline:
            time.sleep(0.5)
            traces = jaeger.traces(SERVICE, {"groundwork.request_id": request_id})
    assert len(traces) == 1, traces
    spans = traces[0]["spans"]
    by_id = {s["spanID"]: s for s in spans}
    named = {s["operationName"]: s for s in spans}
    request = named["POST /v1/search"]
    assert _tags(request)["groundwork.tenant"] == tenant_id
    service = named["groundwork.service.search"]
    assert _tags(service)["groundwork.tenant"] == tenant_id
    assert _ancestors(service, by_id)[-1] == "POST /v1/search"
    for leg in ("groundwork.leg.vector", "groundwork.leg.keyword"):
        assert "groundwork.service.search" in _ancestors(named[leg], by_id), leg
    postgres = [s for s in spans if _tags(s).get("db.system") == "postgresql"]
    assert any("groundwork.leg.vector" in _ancestors(s, by_id) for s in postgres), postgres
    assert any("groundwork.service.search" in _ancestors(s, by_id) for s in postgres)
    opensearch = [
        s
        for s in spans
        if any("_search" in str(v) for k, v in _tags(s).items() if k in ("url.full", "http.url"))
    ]
    assert opensearch, [(s["operationName"], _tags(s)) for s in spans]
    assert all("groundwork.leg.keyword" in _ancestors(s, by_id) for s in opensearch)

    # the request's JSON log line names the same trace, the tenant and the request id
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if '"route"' in line]
    logged = [line for line in lines if line.get("request_id") == request_id]
    assert logged, lines
    assert logged[0]["trace_id"] == traces[0]["traceID"].rjust(32, "0")
    assert logged[0]["tenant"] == tenant_id
    assert logged[0]["route"] == "/v1/search" and logged[0]["status"] == 200


def test_with_tracing_off_nothing_is_exported(
    platform: Platform, searchable: str, index_prefix: str, jaeger: EmbeddedJaeger
) -> None:
    request_id = f"test-off-{uuid.uuid4().hex}"
    before = len(jaeger.traces(SERVICE))
    # OpenTelemetry's own variables do not turn tracing on: only GROUNDWORK_OTLP_ENDPOINT does
    env = _served_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint, "OTEL_TRACES_SAMPLER": "always_on"}
    )
    with serve_api(_free_port(), TEST_DATABASE, index_prefix, extra_env=env) as base:
        answered = _search(base, searchable, request_id)
        assert answered.status_code == 200, answered.text
        assert answered.headers["x-request-id"] == request_id  # the id is answered either way
        time.sleep(3)  # three export intervals: a span sent would have arrived
    assert jaeger.traces(SERVICE, {"groundwork.request_id": request_id}) == []
    assert len(jaeger.traces(SERVICE)) == before


def test_a_dagster_run_and_its_steps_are_one_trace(
    platform: Platform, tenant_id: str, index_prefix: str, jaeger: EmbeddedJaeger, tmp_path: Path
) -> None:
    """As run_traces_sensor sends them: from Dagster's own record of the run."""
    write_inbox(platform.settings.inbox_dir, tenant_id, {"note.md": "# Note\n\nbody\n"})
    service = f"groundwork-dagster-test-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{jaeger.otlp_endpoint}/v1/traces"))
    )
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.add_dynamic_partitions("tenant", [tenant_id])
        result = dg.materialize(
            ALL_ASSETS,
            selection=["source_registrations", "extracted_documents"],
            partition_key=tenant_id,
            instance=instance,
            resources={"groundwork": resource(index_prefix)},
        )
        cursor = export_finished_runs(instance, None, provider.get_tracer("test"))
        assert cursor is not None
        # a second pass from the cursor sends nothing again
        assert export_finished_runs(instance, cursor, provider.get_tracer("test")) == cursor
    provider.shutdown()
    traces: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while not traces and time.monotonic() < deadline:
        time.sleep(0.5)
        traces = jaeger.traces(service)
    assert len(traces) == 1, traces
    spans = traces[0]["spans"]
    by_id = {s["spanID"]: s for s in spans}
    named = {s["operationName"]: s for s in spans}
    run = next(s for s in spans if s["operationName"].startswith("dagster.run "))
    assert _tags(run)["dagster.run_id"] == result.run_id
    assert _tags(run)["groundwork.tenant"] == tenant_id
    for step in ("source_registrations", "extracted_documents"):
        span = named[f"dagster.step {step}"]
        assert _ancestors(span, by_id) == [run["operationName"]]
        assert span["duration"] > 0
