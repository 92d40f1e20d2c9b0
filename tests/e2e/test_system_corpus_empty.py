"""An empty system corpus is not searched (issue #33). Every tenant reads the
shared system corpus unless its switch is off, and most homes never put a
document there: each search then planned a second vector arm, filtered the
keyword leg and the re-check by a second owner, and found nothing in it. The
tenant row a request reads says whether the system corpus holds a live
document, and the scope reads it only then; a system document registered or
deleted counts from the next request.

The system tenant is one per database, so this module runs on a database of
its own, whose system corpus starts empty and is left empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from groundwork.lifecycle import purge_deleted
from groundwork.ports import SYSTEM_TENANT
from groundwork.retrieval.outcome import Found
from groundwork.services import retrieval, tenant_wall, tenants
from groundwork.services.retrieval import SearchQuery
from resources.composition.platform import EngineEndpoints, Platform, connect
from resources.composition.settings import GroundworkSettings
from testbed.tenants import new_tenant, register_markdown
from tests.e2e.helpers import close_emptying_the_system_corpus, publish_registered

DATABASE = "groundwork_test_system_empty"
TEXT = "# Muster\n\nThe muster point for visitors is the north car park.\n"


@pytest.fixture(scope="module")
def platform(settings: GroundworkSettings, engines: EngineEndpoints) -> Iterator[Platform]:
    platform = connect(
        replace(settings, keyword_backend="opensearch"),
        engines,
        database=DATABASE,
        index_prefix=f"gwsysempty-{uuid.uuid4().hex[:8]}",
    )
    tenants.create_system_tenant(platform.catalog, platform.settings.default_model_key)
    yield platform
    close_emptying_the_system_corpus(platform)


def _sources_found(platform: Platform, secret: str, mode: str) -> set[str]:
    found = platform.catalog.authenticate(secret)
    assert found is not None
    _, outcome = retrieval.run_search(
        platform,
        found.principal,
        SearchQuery("muster point visitors", 10, mode, False),
        found.tenant,
    )
    return {h.chunk.source_id for h in outcome.hits} if isinstance(outcome, Found) else set()


def test_the_system_corpus_is_read_only_while_it_holds_a_document(platform: Platform) -> None:
    reader = new_tenant(platform, "empty-sys")
    own = register_markdown(platform, reader, "own.md", TEXT)
    publish_registered(platform, reader)
    _, secret = platform.catalog.create_api_key(reader, [f"tenant:{reader}"], "reader")

    def reading() -> tuple[bool, int]:
        found = platform.catalog.authenticate(secret)
        assert found is not None
        scope = tenant_wall.reading_scope(found.principal, found.tenant)
        assert found.tenant == platform.catalog.get_tenant(reader)
        return found.tenant.system_corpus_holds_documents, len(scope.readable_owners())

    assert reading() == (False, 1)
    assert _sources_found(platform, secret, "hybrid") == {own}

    system_doc = register_markdown(platform, SYSTEM_TENANT, "muster.md", TEXT)
    assert reading() == (True, 2)  # registered: read from the next request on
    publish_registered(platform, SYSTEM_TENANT)
    for mode in ("vector", "keyword", "hybrid"):
        assert _sources_found(platform, secret, mode) == {own, system_doc}, mode

    platform.catalog.mark_source_deleting(SYSTEM_TENANT, system_doc)
    assert reading() == (False, 1)
    purge_deleted(platform.catalog, platform.indexes(), platform.blobs, SYSTEM_TENANT)
    assert _sources_found(platform, secret, "hybrid") == {own}
