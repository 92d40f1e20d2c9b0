"""The learned reranker on the real engines: identifier queries keep the
identifier reranker's guarantee (each code's document first: MRR@10 = 1.000)
with it in the search path, whatever its weights (here a model trained on a
synthetic slice: the shipped one is trained from ../shared data)."""

from __future__ import annotations

import dataclasses

from groundwork.ports import AccessScope
from groundwork.retrieval.kernel import SearchRequest, hybrid_search
from groundwork.retrieval.learned_rank import LearnedReranker, train
from groundwork.retrieval.outcome import Found
from resources.composition.platform import Platform
from testbed.tenants import seed_tenant
from tests.e2e.helpers import publish_registered
from tests.unit.test_learned_rank import slice_of_queries

CODES = ("ERR-4021", "Q3-2026", "IL-6", "METTL3", "rs1800795", "HDAC-1")
FILLER = (
    "The storage service reports quota use per volume and per tenant.",
    "Quarterly reports summarise revenue, costs and the outlook.",
    "Cytokines signal between cells of the immune system.",
    "Methylation of RNA changes how transcripts are translated.",
    "Genetic variants are catalogued with their population frequency.",
    "Histone deacetylases regulate chromatin and gene expression.",
)


def _tenant(platform: Platform) -> str:
    docs: dict[str, str] = {}
    for n, (code, filler) in enumerate(zip(CODES, FILLER, strict=True)):
        # one document names the code; a near neighbour shares its topic only
        docs[f"code{n}.md"] = f"# Note {n}\n\n{filler} Reference {code} applies here.\n"
        docs[f"topic{n}.md"] = f"# Topic {n}\n\n{filler} {filler}\n"
    tenant = seed_tenant(platform, "lr", docs)
    publish_registered(platform, tenant)
    return tenant


def test_identifier_queries_keep_mrr_one_with_the_learned_reranker(platform: Platform) -> None:
    tenant = _tenant(platform)
    engines = dataclasses.replace(
        platform.search_engines(platform.settings.default_model_key),
        reranker=LearnedReranker(train(slice_of_queries(12), depth=10)),
    )
    scope = AccessScope(tenant, (f"tenant:{tenant}",))
    reciprocal = []
    for n, code in enumerate(CODES):
        for query in (code, f"which note mentions {code}"):
            found = hybrid_search(scope, SearchRequest(query, limit=10), engines)
            assert isinstance(found, Found)
            names = [hit.chunk.filename for hit in found.hits]
            rank = names.index(f"code{n}.md") + 1 if f"code{n}.md" in names else None
            reciprocal.append(1.0 / rank if rank else 0.0)
    assert sum(reciprocal) / len(reciprocal) == 1.0
    plain = hybrid_search(scope, SearchRequest("how are genes regulated", limit=5), engines)
    assert isinstance(plain, Found) and plain.hits
