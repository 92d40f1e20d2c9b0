"""The shared system corpus (issue #35), over HTTP against the real engines:
a tenant reads its own documents and the system corpus's, never another
tenant's, in the vector leg, the keyword leg and fused; with its switch off
the system corpus is gone from every leg and its citations are withheld; only
a key of the system tenant holding system:admin writes system documents, and
deleting one removes it for every tenant.

The system tenant is one per database, so this module runs on a database of
its own (and an index prefix of its own): a system document registered here
can never appear in another test's tenant. Both keyword backends are run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from groundwork.errors import Forbidden, Refused
from groundwork.lifecycle import purge_deleted
from groundwork.ports import SYSTEM_TENANT, Principal
from groundwork.services import scopes, tenants
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from retrieval_api.app import create_app
from testbed.tenants import new_tenant, register_markdown
from tests.e2e.helpers import close_emptying_the_system_corpus, publish_registered

SYSTEM_DATABASE = "groundwork_test_system"
#: words every document shares, so each leg finds all of them without a filter
SHARED = "the evacuation assembly point procedure"
SYSTEM_TEXT = (
    "# Evacuation\n\nThe evacuation assembly point procedure: everyone meets at the "
    "north car park beside the flagpole when the alarm sounds.\n"
)
MODES = ["vector", "keyword", "hybrid"]


@dataclass
class Corpus:
    platform: Platform
    client: TestClient
    system_source: str
    own_source: str
    other_source: str
    reader: dict[str, str]  # tenant A's key
    other: dict[str, str]  # tenant B's key
    operator: dict[str, str]  # platform:admin
    system_admin: dict[str, str]  # system tenant, system:admin
    reader_tenant: str


def _headers(platform: Platform, tenant: str, scopes_: list[str] | None = None) -> dict[str, str]:
    subjects = [f"tenant:{tenant}"]
    _, key = (
        platform.catalog.create_api_key(tenant, subjects, "system-corpus", scopes_)
        if scopes_
        else platform.catalog.create_api_key(tenant, subjects, "system-corpus")
    )
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module", params=["opensearch", "postgres"])
def corpus(
    request: pytest.FixtureRequest, settings: GroundworkSettings, engines: EngineEndpoints
) -> Iterator[Corpus]:
    platform = connect(
        replace(settings, keyword_backend=request.param),
        engines,
        database=SYSTEM_DATABASE,
        index_prefix=f"gwsys-{uuid.uuid4().hex[:8]}",
    )
    tenants.create_system_tenant(platform.catalog, platform.settings.default_model_key)
    system_source = register_markdown(
        platform, SYSTEM_TENANT, f"evac-{uuid.uuid4().hex[:6]}.md", SYSTEM_TEXT
    )
    reader = new_tenant(platform, "sys-a")
    other = new_tenant(platform, "sys-b")
    own_source = register_markdown(
        platform,
        reader,
        "drill.md",
        "# Drill\n\nOur own evacuation assembly point procedure names fire wardens per floor.\n",
    )
    other_source = register_markdown(
        platform,
        other,
        "secret.md",
        "# Secret\n\nThe other tenant's evacuation assembly point procedure is confidential.\n",
    )
    for tenant in (SYSTEM_TENANT, reader, other):
        publish_registered(platform, tenant)
    operators = new_tenant(platform, "sys-ops")
    client = TestClient(create_app(lambda: platform), raise_server_exceptions=False)
    yield Corpus(
        platform=platform,
        client=client,
        system_source=system_source,
        own_source=own_source,
        other_source=other_source,
        reader=_headers(platform, reader),
        other=_headers(platform, other),
        operator=_headers(platform, operators, ["files:read", "platform:admin"]),
        system_admin=_headers(
            platform, SYSTEM_TENANT, ["files:read", "files:write", "files:delete", "system:admin"]
        ),
        reader_tenant=reader,
    )
    close_emptying_the_system_corpus(platform)


def _search(corpus: Corpus, headers: dict[str, str], mode: str) -> dict[str, Any]:
    answer = corpus.client.post(
        "/v1/search",
        json={"query": SHARED, "mode": mode, "rerank": False, "limit": 20},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["missing_legs"] == [], found
    return found  # type: ignore[no-any-return]


def _set_switch(corpus: Corpus, on: bool) -> None:
    answer = corpus.client.put(
        f"/v1/admin/tenants/{corpus.reader_tenant}/system-corpus",
        json={"enabled": on},
        headers=corpus.operator,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"tenant_id": corpus.reader_tenant, "enabled": on}


@pytest.mark.parametrize("mode", MODES)
def test_a_tenant_reads_its_own_and_the_system_corpus_never_another(
    corpus: Corpus, mode: str
) -> None:
    hits = _search(corpus, corpus.reader, mode)["hits"]
    by_source = {h["source_id"]: h for h in hits}
    assert set(by_source) == {corpus.own_source, corpus.system_source}, hits
    assert by_source[corpus.system_source]["corpus"] == "system"
    assert by_source[corpus.system_source]["citation"]["corpus"] == "system"
    assert by_source[corpus.own_source]["corpus"] == "tenant"
    assert by_source[corpus.own_source]["citation"]["corpus"] == "tenant"
    # and the other tenant, symmetrically: its own and the system's, never A's
    others = {h["source_id"] for h in _search(corpus, corpus.other, mode)["hits"]}
    assert others == {corpus.other_source, corpus.system_source}


@pytest.mark.parametrize("layer", ["summary", "summary_first"])
def test_every_layer_reads_the_system_corpus(corpus: Corpus, layer: str) -> None:
    answer = corpus.client.post(
        "/v1/search",
        json={"query": SHARED, "layer": layer, "rerank": False, "limit": 20},
        headers=corpus.reader,
    )
    assert answer.status_code == 200, answer.text
    hits = answer.json()["hits"]
    assert {h["source_id"] for h in hits} == {corpus.own_source, corpus.system_source}, hits
    assert {h["corpus"] for h in hits if h["source_id"] == corpus.system_source} == {"system"}


def test_the_search_tool_says_where_a_passage_came_from(corpus: Corpus) -> None:
    called = corpus.client.post(
        "/v1/tools/search_files", json={"query": SHARED}, headers=corpus.reader
    )
    assert called.status_code == 200, called.text
    by_file = {h["file_id"]: h for h in called.json()["hits"]}
    assert set(by_file) == {corpus.own_source, corpus.system_source}
    assert by_file[corpus.system_source]["corpus"] == "system"
    assert by_file[corpus.system_source]["citation"]["corpus"] == "system"
    assert by_file[corpus.own_source]["corpus"] == "tenant"


def test_a_system_citation_resolves_for_every_reader(corpus: Corpus) -> None:
    for headers in (corpus.reader, corpus.other):
        hit = next(
            h
            for h in _search(corpus, headers, "hybrid")["hits"]
            if h["source_id"] == corpus.system_source
        )
        checked = corpus.client.get(f"/v1/citations/{hit['citation_id']}", headers=headers)
        assert checked.status_code == 200, checked.text
        assert checked.json()["status"] == "exists", checked.json()
        assert checked.json()["citation"]["corpus"] == "system"
        chunk = corpus.client.get(f"/v1/chunks/{hit['chunk_id']}", headers=headers)
        assert chunk.status_code == 200, chunk.text


def test_the_switch_off_removes_the_system_corpus_from_every_leg(corpus: Corpus) -> None:
    hit = next(
        h
        for h in _search(corpus, corpus.reader, "hybrid")["hits"]
        if h["source_id"] == corpus.system_source
    )
    shown = corpus.client.get(
        f"/v1/admin/tenants/{corpus.reader_tenant}/system-corpus", headers=corpus.operator
    )
    assert shown.json() == {"tenant_id": corpus.reader_tenant, "enabled": True}
    _set_switch(corpus, False)
    try:
        for mode in MODES:
            sources = {h["source_id"] for h in _search(corpus, corpus.reader, mode)["hits"]}
            assert sources == {corpus.own_source}, (mode, sources)
        checked = corpus.client.post(
            "/v1/citations/resolve",
            json={"citation_ids": [hit["citation_id"]]},
            headers=corpus.reader,
        ).json()
        assert [c["status"] for c in checked["citations"]] == ["withheld"], checked
        assert corpus.client.get(
            f"/v1/chunks/{hit['chunk_id']}", headers=corpus.reader
        ).status_code in {403, 404}
        # another tenant's switch is its own
        others = {h["source_id"] for h in _search(corpus, corpus.other, "hybrid")["hits"]}
        assert corpus.system_source in others
    finally:
        _set_switch(corpus, True)
    checked = corpus.client.post(
        "/v1/citations/resolve", json={"citation_ids": [hit["citation_id"]]}, headers=corpus.reader
    ).json()
    assert [c["status"] for c in checked["citations"]] == ["exists"], checked


def test_a_system_document_is_read_whole_while_the_corpus_is_read(corpus: Corpus) -> None:
    """Its passage was cited to the tenant, so the document is readable like its
    own (status, blocks, tables); never another tenant's; not once switched off."""

    def read(headers: dict[str, str], source_id: str) -> tuple[int, int, str]:
        status = corpus.client.get(f"/v1/sources/{source_id}/status", headers=headers)
        body = corpus.client.get(f"/v1/sources/{source_id}/read", headers=headers)
        tables = corpus.client.get(f"/v1/sources/{source_id}/tables", headers=headers)
        assert tables.status_code == body.status_code, tables.text
        return status.status_code, body.status_code, body.text

    status, code, text = read(corpus.reader, corpus.system_source)
    assert (status, code) == (200, 200), text
    assert "north car park" in text
    assert read(corpus.reader, corpus.other_source)[:2] == (404, 404)
    _set_switch(corpus, False)
    try:
        assert read(corpus.reader, corpus.system_source)[:2] == (404, 404)
    finally:
        _set_switch(corpus, True)


def test_a_tenant_cannot_set_its_switch_with_its_own_key(corpus: Corpus) -> None:
    answer = corpus.client.put(
        f"/v1/admin/tenants/{corpus.reader_tenant}/system-corpus",
        json={"enabled": False},
        headers=corpus.reader,
    )
    assert answer.status_code == 403, answer.text


def test_the_row_wall_lets_a_tenant_read_system_rows_and_never_write_them(
    corpus: Corpus,
) -> None:
    """The second wall (row-level security) agrees with the legs: a walled
    connection reads the system corpus's rows while the switch is on, never
    another tenant's, and can change none of them."""
    platform = corpus.platform
    walled = platform.for_tenant(corpus.reader_tenant).pool

    def visible() -> set[str]:
        with walled.connection() as conn:
            rows = conn.execute("SELECT DISTINCT tenant_id FROM chunks").fetchall()
        return {r[0] for r in rows}

    assert visible() == {corpus.reader_tenant, SYSTEM_TENANT}
    with walled.connection() as conn:
        changed = conn.execute(
            "UPDATE chunks SET body = 'defaced' WHERE tenant_id = %s", (SYSTEM_TENANT,)
        ).rowcount
        assert changed == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO sources (source_id, tenant_id, origin, filename) "
                "VALUES ('src_forged', %s, 'api:x', 'x')",
                (SYSTEM_TENANT,),
            )
    with walled.connection() as conn:
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN SELECT chunk_id FROM chunks").fetchall()
        )
    # the policy's function is inlined into a comparison of the wall's setting:
    # as a call (its first form held a subquery) it ran once per system row a
    # search visited (bench/system_corpus.py: p50 114 ms against 21 ms)
    assert "groundwork.system_corpus" in plan and "groundwork_reads_system" not in plan, plan
    platform.catalog.set_system_corpus(corpus.reader_tenant, False)
    try:
        assert visible() == {corpus.reader_tenant}
    finally:
        platform.catalog.set_system_corpus(corpus.reader_tenant, True)


def test_only_a_system_admin_key_writes_system_documents(corpus: Corpus) -> None:
    platform = corpus.platform
    # an ordinary key of the system tenant (every tenant scope, no system:admin)
    plain = _headers(
        platform, SYSTEM_TENANT, ["files:read", "files:write", "files:delete", "sources:admin"]
    )
    refused = corpus.client.post(
        "/v1/sources", params={"filename": "x.txt"}, content=b"not allowed", headers=plain
    )
    assert refused.status_code == 403, refused.text
    assert "system:admin" in refused.text
    assert (
        corpus.client.delete(f"/v1/sources/{corpus.system_source}", headers=plain).status_code
        == 403
    )
    # system:admin is never a customer tenant's, whatever the operator asks
    with pytest.raises(Refused):
        tenants.issue_key(platform.catalog, corpus.reader_tenant, None, "x", ["system:admin"])
    with pytest.raises(Refused) as reserved:
        tenants.create_tenant(platform.catalog, SYSTEM_TENANT, "mine", "bge_small_en_v15_q")
    assert reserved.value.code == "reserved"
    with pytest.raises(Forbidden):
        scopes.require(
            Principal(SYSTEM_TENANT, ("tenant:system",), scopes=("files:write",)),
            "sources.register",
        )
    # a tenant's admin key writes into its own tenant only
    made = corpus.client.post(
        "/v1/sources", params={"filename": "mine.txt"}, content=b"own words", headers=corpus.reader
    )
    assert made.status_code == 201, made.text
    assert _live_owner(platform, made.json()["source_id"]) == corpus.reader_tenant
    allowed = corpus.client.post(
        "/v1/sources",
        params={"filename": "notice.txt"},
        content=b"A system notice.",
        headers=corpus.system_admin,
    )
    assert allowed.status_code == 201, allowed.text
    assert _live_owner(platform, allowed.json()["source_id"]) == SYSTEM_TENANT


def _live_owner(platform: Platform, source_id: str) -> str:
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT tenant_id FROM sources WHERE source_id = %s", (source_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_deleting_a_system_document_removes_it_for_every_tenant(corpus: Corpus) -> None:
    """Last in the module: it deletes a system document (a second one, so the
    others keep theirs) and sweeps it from every store."""
    platform = corpus.platform
    phrase = f"muster{uuid.uuid4().hex[:6]}"
    doomed = register_markdown(
        platform,
        SYSTEM_TENANT,
        f"{phrase}.md",
        f"# Muster\n\nThe {phrase} evacuation assembly point procedure for visitors.\n",
    )
    publish_registered(platform, SYSTEM_TENANT)
    cited: dict[str, str] = {}
    for name, headers in (("reader", corpus.reader), ("other", corpus.other)):
        for mode in MODES:
            answer = corpus.client.post(
                "/v1/search",
                json={"query": f"{phrase} {SHARED}", "mode": mode, "rerank": False, "limit": 20},
                headers=headers,
            ).json()
            hits = [h for h in answer["hits"] if h["source_id"] == doomed]
            assert hits, (name, mode, answer)
            cited[name] = hits[0]["citation_id"]
    deleted = corpus.client.delete(f"/v1/sources/{doomed}", headers=corpus.system_admin)
    assert deleted.status_code == 202, deleted.text
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, SYSTEM_TENANT)
    for name, headers in (("reader", corpus.reader), ("other", corpus.other)):
        for mode in MODES:
            answer = corpus.client.post(
                "/v1/search",
                json={"query": f"{phrase} {SHARED}", "mode": mode, "rerank": False, "limit": 20},
                headers=headers,
            ).json()
            assert doomed not in {h["source_id"] for h in answer["hits"]}, (name, mode)
        checked = corpus.client.get(f"/v1/citations/{cited[name]}", headers=headers).json()
        assert checked["status"] == "removed", checked
        assert phrase not in str(checked["citation"]["untrusted_excerpt"])
        assert phrase not in str(checked["citation"]["heading_path"])
    with psycopg.connect(platform.database_url, autocommit=True) as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM chunks WHERE source_id = %(s)s) + "
            "(SELECT count(*) FROM keyword_chunks WHERE source_id = %(s)s) + "
            "(SELECT count(*) FROM citation_snapshots WHERE source_id = %(s)s "
            " AND snapshot::text LIKE %(p)s)",
            {"s": doomed, "p": "%procedure for visitors%"},
        ).fetchone()
    assert left == (0,)
