"""Generated corpora, a stand-in embedder and an API launcher shared by the
tests and the benchmarks. Never shipped: nothing in the product imports it,
and tests and benches import it rather than each other (import-linter)."""
