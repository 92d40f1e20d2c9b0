"""A publication leaves the tenant's keyword index in one segment: every
document it made live was rewritten, and each segment left costs every
search (groundwork.stages.publication)."""

from __future__ import annotations

import time

from resources.composition.platform import Platform
from resources.opensearch.keyword_index import OpenSearchKeywordIndex
from tests.e2e.helpers import publish_registered, tenant_with_notes


def test_a_publication_merges_a_small_tenant_index(platform: Platform) -> None:
    keywords = platform.keywords
    assert isinstance(keywords, OpenSearchKeywordIndex)
    tenant = tenant_with_notes(platform, "compact", 6)
    name = keywords.index_for(tenant)

    def segments() -> int:
        keywords.client.indices.refresh(index=name)
        stats = keywords.client.indices.stats(index=name, metric="segments")
        return int(stats["indices"][name]["primaries"]["segments"]["count"])

    publish_registered(platform, tenant)
    deadline = time.monotonic() + 60
    while segments() != 1:
        assert time.monotonic() < deadline, "the index was left in parts"
        time.sleep(0.2)
    assert len(keywords.chunk_ids(tenant)) >= 6
