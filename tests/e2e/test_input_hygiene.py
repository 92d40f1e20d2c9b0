"""Bad input never gives a 500 or a dropped connection (issue 18): NUL and lone
surrogates are refused naming the field, clamps come before arithmetic,
downloads of any filename get a valid header, JSON bodies are capped and
depth-bounded, and every error has the project's shape. A property-based walk
drives every route of the OpenAPI document and every tool with hostile strings."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundwork.tools.registry import TOOLS
from resources.composition.platform import Platform
from retrieval_api.app import create_app

HOSTILE = st.one_of(
    st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfff", "文件", "ملف", "\u202e", "a\r\nb", ""]),
    st.text(min_size=0, max_size=20),
)


@pytest.fixture(scope="module")
def world(platform: Platform) -> dict[str, Any]:
    tenant = f"h-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    _, key = platform.catalog.create_api_key(
        tenant,
        [f"tenant:{tenant}"],
        "all",
        ["files:read", "files:write", "files:delete", "sources:admin", "artifacts:write"],
    )
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    return {"client": client, "headers": {"Authorization": f"Bearer {key}"}}


def _shaped(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert set(body) >= {"error", "message"}, body


def _body(raw: str) -> str:
    """JSON with the string as given (lone surrogates as \\u escapes)."""
    return json.dumps(raw)


def test_nul_and_lone_surrogates_are_refused_naming_the_field(world: dict[str, Any]) -> None:
    client, headers = world["client"], world["headers"]
    for raw in ('{"query": "a\\u0000b"}', '{"query": "\\ud800"}'):
        response = client.post(
            "/v1/search",
            content=raw,
            headers={**headers, "content-type": "application/json"},
        )
        assert response.status_code == 422 and "query" in response.json()["message"]
    tags = client.put(
        "/v1/sources/src_x/tags",
        content='{"tags": ["ok", "bad\\u0000"]}',
        headers={**headers, "content-type": "application/json"},
    )
    assert tags.status_code == 422 and "tags[1]" in tags.json()["message"]
    path = client.get("/v1/sources/src%00x/status", headers=headers)
    assert path.status_code == 422
    query = client.get("/v1/files", params={"cursor": "a\x00"}, headers=headers)
    assert query.status_code == 422 and "cursor" in query.json()["message"]
    tool = client.post(
        "/v1/tools/read_file",
        content='{"file_id": "src_\\ud800"}',
        headers={**headers, "content-type": "application/json"},
    )
    assert tool.status_code == 422 and "file_id" in tool.json()["message"]


def test_clamps_come_before_arithmetic(world: dict[str, Any], platform: Platform) -> None:
    client, headers = world["client"], world["headers"]
    made = client.post(
        "/v1/sources", params={"filename": "n.md"}, content=b"# N\n\nx\n", headers=headers
    )
    assert made.status_code == 201
    ref = client.post(
        f"/v1/sources/{made.json()['source_id']}/reference",
        params={"ttl_seconds": 10**14},
        headers=headers,
    )
    assert ref.status_code == 200, ref.text


@pytest.mark.parametrize("filename", ["文件.md", "ملف.md", "evil\u202etxt.md"])
def test_downloads_of_any_filename_have_a_valid_header(
    world: dict[str, Any], filename: str
) -> None:
    client, headers = world["client"], world["headers"]
    made = client.post(
        "/v1/sources", params={"filename": filename}, content=b"# T\n\nx\n", headers=headers
    )
    assert made.status_code == 201, made.text
    url = client.post(f"/v1/sources/{made.json()['source_id']}/reference", headers=headers).json()[
        "url"
    ]
    got = client.get(url)
    assert got.status_code == 200 and got.content == b"# T\n\nx\n"
    disposition = got.headers["content-disposition"]
    assert "filename*=UTF-8''" in disposition and "\n" not in disposition
    disposition.encode("latin-1")  # a header is Latin-1; never raises now


def test_json_bodies_are_capped_and_depth_bounded(world: dict[str, Any]) -> None:
    client, headers = world["client"], world["headers"]
    huge = client.post(
        "/v1/search",
        content=b'{"query": "' + b"a" * (5 * 1024 * 1024) + b'"}',
        headers={**headers, "content-type": "application/json"},
    )
    assert huge.status_code == 413 and huge.json()["error"] == "too-large"
    deep = client.post(
        "/v1/search",
        content=b'{"query": "x", "filters": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        headers={**headers, "content-type": "application/json"},
    )
    assert deep.status_code == 422 and set(deep.json()) >= {"error", "message"}
    unknown = client.get("/v1/no-such-route", headers=headers)
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"


ROUTES: list[tuple[str, str]] = []


def _routes(client: TestClient) -> list[tuple[str, str]]:
    if not ROUTES:
        paths = client.get("/openapi.json").json()["paths"]
        ROUTES.extend(sorted((m.upper(), p) for p, ops in paths.items() for m in ops))
    return ROUTES


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(data=st.data())
def test_every_route_and_tool_survives_hostile_strings(
    world: dict[str, Any], data: st.DataObject
) -> None:
    client, headers = world["client"], world["headers"]
    method, path = data.draw(st.sampled_from(_routes(client)))
    value = data.draw(HOSTILE)
    raw = quote(value.encode("utf-8", "surrogatepass"), safe="")  # as an attacker would send it
    url = re.sub(r"\{[^}]+\}", lambda _: raw or "x", path)
    url += f"?cursor={raw}&filename={raw or 'x'}"
    body = '{"query": %s, "filename": %s, "subjects": [%s], "tags": [%s], "path": %s}' % (
        (_body(value),) * 5
    )
    response = client.request(
        method,
        url,
        content=body.encode("utf-8", "surrogatepass"),
        headers={**headers, "content-type": "application/json"},
    )
    _shaped(response)
    tool = data.draw(st.sampled_from(sorted(TOOLS)))
    arguments = {
        name: value
        for name, spec in TOOLS[tool].input_schema["properties"].items()
        if spec.get("type") == "string"
    }
    called = client.post(
        f"/v1/tools/{tool}",
        content=json.dumps(arguments).encode("utf-8", "surrogatepass"),
        headers={**headers, "content-type": "application/json"},
    )
    _shaped(called)
