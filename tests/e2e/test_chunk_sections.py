"""Parent-child chunks (issue #35, layered retrieval): each version's sections
are rows (chunk_sections) and each raw chunk names its section (parent_id);
section drill-down walks that relation; a re-chunk rebuilds it, deletion
erases it, and migration 0038's backfill links rows written before it."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
from fastapi.testclient import TestClient

from groundwork.lifecycle import purge_deleted
from groundwork.ports import AccessScope
from groundwork.tools.dispatch import ToolDispatcher
from resources.composition.platform import Platform
from resources.postgres.catalog_parts.common import select_versions
from retrieval_api.app import create_app
from tests.conformance.pipeline_steps import chunks_of
from tests.e2e.helpers import resource, run_pipeline, write_inbox

GUIDE = """# Travel guide

Night trains to the coast leave at 22:10 on Fridays. Sleeper cabins are booked online.

## Refunds

Unused tickets are refunded within seven days of the journey.

Refund requests need the ticket number and the booking email.

## Cabins

Each cabin sleeps two and has a washbasin.
"""


@pytest.fixture
def guide(platform: Platform, index_prefix: str) -> dict[str, str]:
    tenant = f"cs-{uuid.uuid4().hex[:8]}"
    write_inbox(platform.settings.inbox_dir, tenant, {"guide.md": GUIDE})
    run_pipeline(
        dg.DagsterInstance.ephemeral(),
        tenant,
        platform.settings.default_model_key,
        resource(index_prefix),
    )
    with platform.pool.connection() as conn:
        source_id, version_id = conn.execute(
            "SELECT source_id, current_version_id FROM sources WHERE tenant_id = %s", (tenant,)
        ).fetchone()  # type: ignore[misc]
    return {"tenant": tenant, "source": source_id, "version": version_id}


def _children(platform: Platform, version_id: str) -> list[tuple[str, int, list[str], str | None]]:
    with platform.pool.connection() as conn:
        return conn.execute(  # type: ignore[return-value]
            "SELECT chunk_id, position, heading_path, parent_id FROM chunks "
            "WHERE version_id = %s AND layer = 'raw' ORDER BY position",
            (version_id,),
        ).fetchall()


def _sections(platform: Platform, version_id: str) -> list[tuple[str, int, list[str], int, int]]:
    with platform.pool.connection() as conn:
        return conn.execute(  # type: ignore[return-value]
            "SELECT section_id, position, heading_path, first_position, chunk_count "
            "FROM chunk_sections WHERE version_id = %s ORDER BY position",
            (version_id,),
        ).fetchall()


def test_sections_are_rows_and_each_raw_chunk_names_its_parent(
    platform: Platform, guide: dict[str, str]
) -> None:
    children = _children(platform, guide["version"])
    sections = _sections(platform, guide["version"])
    assert children and all(parent for *_, parent in children)
    # one parent per heading path, in document order, with its children counted
    by_path: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for _chunk_id, position, path, parent in children:
        by_path.setdefault(tuple(path), []).append((parent or "", position))
    assert [tuple(path) for _, _, path, _, _ in sections] == list(by_path)
    for section_id, _, path, first, count in sections:
        members = by_path[tuple(path)]
        assert {parent for parent, _ in members} == {section_id}
        assert (first, count) == (members[0][1], len(members))
    # the summary page is no section's child
    with platform.pool.connection() as conn:
        orphans = conn.execute(
            "SELECT count(*) FROM chunks WHERE version_id = %s AND layer = 'summary' "
            "AND parent_id IS NOT NULL",
            (guide["version"],),
        ).fetchone()
    assert orphans == (0,)


def test_section_drill_down_walks_the_parent_relation(
    platform: Platform, guide: dict[str, str]
) -> None:
    scope = AccessScope(guide["tenant"], (f"tenant:{guide['tenant']}",))
    reader = platform.search_engines(platform.settings.default_model_key).reader
    children = _children(platform, guide["version"])
    refunds = [c for c in children if c[2] and c[2][-1] == "Refunds"]
    assert refunds
    first = refunds[0][0]
    expected = [c[0] for c in children if c[3] == refunds[0][3]]
    assert [v.chunk_id for v in reader.section(scope, first)] == expected
    # the relation, not the heading text, decides: a child whose heading path
    # reads differently is still its parent's (a reconstruction would drop it)
    with platform.pool.connection() as conn:
        conn.execute(
            "UPDATE chunks SET heading_path = '{Travel guide,Refunds (cont.)}' WHERE chunk_id = %s",
            (expected[-1],),
        )
    assert [v.chunk_id for v in reader.section(scope, first)] == expected
    # another tenant's scope walks nothing
    other = AccessScope(f"cs-{uuid.uuid4().hex[:8]}", ("tenant:x",))
    assert reader.section(other, first) == []


def test_a_rechunk_rebuilds_the_sections_and_deletion_erases_them(
    platform: Platform, guide: dict[str, str]
) -> None:
    assert len(_sections(platform, guide["version"])) >= 2
    with platform.pool.connection() as conn:
        [version] = select_versions(conn, "WHERE v.version_id = %s", (guide["version"],))
    [chunk] = chunks_of(version, 1, label="one section now")
    platform.catalog.replace_chunks(version, [chunk])
    [(section_id, _, path, first, count)] = _sections(platform, guide["version"])
    assert (tuple(path), first, count) == (chunk.heading_path, 0, 1)
    assert [c[3] for c in _children(platform, guide["version"])] == [section_id]

    assert platform.catalog.mark_source_deleting(guide["tenant"], guide["source"])
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, guide["tenant"])
    with platform.pool.connection() as conn:
        left = conn.execute(
            "SELECT count(*) FROM chunk_sections WHERE source_id = %s", (guide["source"],)
        ).fetchone()
    assert left == (0,)  # heading paths are document text: erased with the chunks


def test_the_backfill_links_rows_written_before_sections_existed(
    platform: Platform, guide: dict[str, str]
) -> None:
    before = _sections(platform, guide["version"])
    linked = _children(platform, guide["version"])
    with platform.pool.connection() as conn:
        # as a version chunked before migration 0038 looked
        conn.execute("DELETE FROM chunk_sections WHERE version_id = %s", (guide["version"],))
        conn.execute(
            "UPDATE chunks SET parent_id = NULL WHERE version_id = %s", (guide["version"],)
        )
        conn.execute("SELECT groundwork_link_sections(%s)", (guide["version"],))
    assert _sections(platform, guide["version"]) == before
    assert _children(platform, guide["version"]) == linked


def test_a_read_chunk_names_its_parent_over_http_and_mcp(
    platform: Platform, guide: dict[str, str]
) -> None:
    _, key = platform.catalog.create_api_key(guide["tenant"], [f"tenant:{guide['tenant']}"], "r")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}"}
    found = client.post(
        "/v1/search", json={"query": "refund requests ticket number"}, headers=headers
    ).json()
    top = found["hits"][0]
    parents = {c[0]: c[3] for c in _children(platform, guide["version"])}
    read = client.get(
        f"/v1/chunks/{top['chunk_id']}", params={"turn": found["turn_id"]}, headers=headers
    )
    assert read.status_code == 200, read.text
    assert read.json()["parent_id"] == parents[top["chunk_id"]]
    dispatcher = ToolDispatcher(lambda: platform)
    who = dispatcher.principal(key)
    assert who is not None
    tool = dispatcher.call(
        who, "get_chunks", {"chunk_ids": [top["chunk_id"]], "turn_id": found["turn_id"]}
    )
    assert tool.ok, tool.payload
    assert tool.payload["chunks"][0]["parent_id"] == parents[top["chunk_id"]]
