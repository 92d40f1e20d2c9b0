"""Tools keep their own promises: every tool that returns a cursor takes it
back, and walking it reaches every file exactly once (search_files with `*`
answered a browse page with next_cursor but accepted no cursor, so an agent
could never read past its first page)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from groundwork.stages.registration import register_file
from resources.composition.platform import Platform
from retrieval_api.app import create_app

FILES = 23  # more than one page of each tool


@pytest.fixture(scope="module")
def agent(platform: Platform) -> tuple[TestClient, dict[str, str], set[str]]:
    tenant = f"cur-{uuid.uuid4().hex[:8]}"
    platform.catalog.ensure_tenant(tenant, tenant, platform.settings.default_model_key)
    ids = set()
    for n in range(FILES):
        ids.add(
            register_file(
                platform.catalog,
                platform.blobs,
                tenant_id=tenant,
                origin=f"inbox://{tenant}/note-{n:02d}.md",
                filename=f"note-{n:02d}.md",
                data=f"# Note {n}\n\nbody {n}\n".encode(),
                subjects=[f"tenant:{tenant}"],
                media_type="text/markdown",
            ).source_id
        )
    _, key = platform.catalog.create_api_key(tenant, [f"tenant:{tenant}"], "agent")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=True)
    return client, {"Authorization": f"Bearer {key}"}, ids


def _walk(
    client: TestClient, headers: dict[str, str], tool: str, args: dict[str, Any], page: Any
) -> list[str]:
    seen: list[str] = []
    cursor = ""
    for _ in range(FILES + 2):  # a cursor that never ends fails here, not forever
        response = client.post(
            f"/v1/tools/{tool}",
            json={**args, **({"cursor": cursor} if cursor else {})},
            headers=headers,
        )
        assert response.status_code == 200, response.text
        files, cursor = page(response.json())
        seen.extend(files)
        if not cursor:
            return seen
    raise AssertionError(f"{tool}'s cursor never ended")


def test_list_files_walks_to_its_end(agent: tuple[TestClient, dict[str, str], set[str]]) -> None:
    client, headers, ids = agent
    seen = _walk(
        client,
        headers,
        "list_files",
        {"limit": 5},
        lambda body: ([f["file_id"] for f in body["files"]], body["next_cursor"]),
    )
    assert sorted(seen) == sorted(ids)


def test_search_files_browse_walks_to_its_end(
    agent: tuple[TestClient, dict[str, str], set[str]],
) -> None:
    client, headers, ids = agent
    seen = _walk(
        client,
        headers,
        "search_files",
        {"query": "*", "limit": 10},
        lambda body: (
            [f["file_id"] for f in body["browse"]["files"]],
            body["browse"]["next_cursor"],
        ),
    )
    assert sorted(seen) == sorted(ids)
