"""Engine lifecycle: reuse, external URLs, refusing a second supervisor."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from groundwork.ports import AccessScope
from groundwork_cli.supervisor import AlreadyRunning, Supervisor
from resources.composition.platform import EngineEndpoints, connect, ensure_engines
from resources.composition.settings import GroundworkSettings
from resources.opensearch.keyword_index import OpenSearchKeywordIndex, client_for
from testbed.index_records import chunk
from tests.conftest import TEST_DATABASE


def test_ensure_engines_reuses_running_engines(
    settings: GroundworkSettings, engines: EngineEndpoints
) -> None:
    again = ensure_engines(settings)
    assert again.server_url == engines.server_url
    assert again.opensearch_url == engines.opensearch_url


def test_several_opensearch_nodes_a_dead_one_costs_a_retry_not_a_search(
    engines: EngineEndpoints,
) -> None:
    """GROUNDWORK_OPENSEARCH_URL may name several nodes of a cluster; every
    request still answers while one of them is down (here: nothing listens)."""
    assert engines.opensearch_url is not None
    dead = "http://127.0.0.1:9"  # the discard port: refused at once
    keywords = OpenSearchKeywordIndex(
        client_for(f"{dead}, {engines.opensearch_url}"), "gwtest-multinode"
    )
    tenant = f"mn-{uuid.uuid4().hex[:8]}"
    scope = AccessScope(tenant, ("team:a",))
    keywords.ensure_schema()
    keywords.upsert([chunk(tenant, "replica promoted after node loss", chunk_id="ch-1")])
    keywords.set_versions_live(tenant, ["ver-1"], True)
    try:
        for _ in range(6):  # round robin: several requests meet the dead node first
            assert [h.chunk_id for h in keywords.search(scope, "replica node", 5)] == ["ch-1"]
    finally:
        keywords.drop()
    with pytest.raises(ValueError):
        client_for(" , ")


def test_external_urls_replace_the_embedded_engines(
    settings: GroundworkSettings, engines: EngineEndpoints, tmp_path: Path
) -> None:
    external = replace(
        settings,
        home=tmp_path,  # nothing embedded may start here
        database_url=engines.server_url,
        opensearch_url=engines.opensearch_url,
    )
    endpoints = ensure_engines(external)
    assert endpoints.postgres is None and endpoints.opensearch is None
    platform = connect(external, endpoints, database=TEST_DATABASE, index_prefix="gwtest-external")
    try:
        assert platform.catalog.list_tenants() is not None
    finally:
        drop = getattr(platform.keywords, "drop", None)
        if drop:
            drop()
        platform.close()
    assert not (tmp_path / "pgdata").exists() and not (tmp_path / "opensearch").exists()


def test_a_second_supervisor_is_refused_with_the_running_addresses(
    settings: GroundworkSettings, tmp_path: Path
) -> None:
    home = replace(settings, home=tmp_path)
    (tmp_path / "supervisor.json").write_text(
        json.dumps(
            {"pid": os.getpid(), "api": "http://127.0.0.1:8088", "ui": "http://127.0.0.1:3000"}
        )
    )
    with pytest.raises(AlreadyRunning, match="already running .*8088.*3000"):
        Supervisor(home)._claim()


def test_a_stale_supervisor_lock_is_taken_over(
    settings: GroundworkSettings, tmp_path: Path
) -> None:
    home = replace(settings, home=tmp_path)
    (tmp_path / "supervisor.json").write_text(json.dumps({"pid": 2**22 + 12345}))
    Supervisor(home)._claim()
    assert json.loads((tmp_path / "supervisor.json").read_text())["pid"] == os.getpid()


def test_another_homes_opensearch_on_our_port_is_refused(
    settings: GroundworkSettings, engines: EngineEndpoints, tmp_path: Path
) -> None:
    from groundwork.errors import EngineUnavailable
    from resources.composition.platform import embedded_opensearch

    if engines.opensearch is None:
        pytest.skip("an external OpenSearch is configured")
    stranger = embedded_opensearch(replace(settings, home=tmp_path))  # same port, different home
    with pytest.raises(EngineUnavailable, match="held by another OpenSearch"):
        stranger.start()
