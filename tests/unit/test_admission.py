"""Admission control: at most `max_active` requests run, a bounded number
wait a bounded time, the rest get 503 with Retry-After at once; the health
endpoint is never queued."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from retrieval_api.admission import AdmissionControl


async def slow_app(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(0.5)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_beyond_capacity_the_answer_is_an_immediate_503_with_retry_after() -> None:
    gate = AdmissionControl(slow_app, max_active=1, max_waiting=1, max_wait_seconds=2.0)

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=gate)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            calls = [client.get("/v1/search") for _ in range(5)]
            return await asyncio.gather(*calls)

    responses = asyncio.run(scenario())
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 200, 503, 503, 503]  # one running, one waiting, three refused
    refused = next(r for r in responses if r.status_code == 503)
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"] == "overloaded" and refused.json()["alternative"]
    assert gate.refused == 3 and gate.waiting == 0


def test_a_wait_longer_than_allowed_is_refused_not_left_hanging() -> None:
    gate = AdmissionControl(slow_app, max_active=1, max_waiting=10, max_wait_seconds=0.1)

    async def scenario() -> list[int]:
        transport = httpx.ASGITransport(app=gate)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            responses = await asyncio.gather(*(client.get("/v1/search") for _ in range(3)))
        return sorted(r.status_code for r in responses)

    assert asyncio.run(scenario()) == [200, 503, 503]


def test_the_health_endpoint_is_never_queued() -> None:
    gate = AdmissionControl(slow_app, max_active=1, max_waiting=0, max_wait_seconds=0.1)

    async def scenario() -> list[int]:
        transport = httpx.ASGITransport(app=gate)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            busy = asyncio.create_task(client.get("/v1/search"))
            await asyncio.sleep(0.05)
            health = await asyncio.gather(*(client.get("/v1/health") for _ in range(3)))
            await busy
        return [r.status_code for r in health]

    assert asyncio.run(scenario()) == [200, 200, 200]
