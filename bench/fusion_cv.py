"""Cross-validated fusion constants over the benchmark database's BEIR tenant.

    uv run python bench/fusion_cv.py [--beir ../shared/data/scifact] [--split train]

Uses the largest tenant of `groundwork_bench` (ingested by
`bench/ingest_and_search.py --beir ...`), records both legs once per judged
query, and prints evals.fusion_cv's table: single legs, plain RRF, the
shipped constants, the in-sample best and the out-of-fold figure.
`groundwork eval --beir ... --cross-validate` prints the same table for an
eval tenant.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from bench.tenants import add_corpus_arguments, bench_tenant, connect_bench_database  # noqa: E402
from evals.evidence import beir_golden  # noqa: E402
from evals.fusion_cv import (  # noqa: E402
    MAX_DEPTH,
    FusionSetting,
    cross_validate,
    format_cross_validation,
    mrr_by_mode,
    record_legs,
)
from evals.identifiers import identifier_golden  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpus_arguments(parser)
    parser.add_argument(
        "--identifiers", type=int, default=200, help="identifier queries drawn from the corpus"
    )
    parser.add_argument(
        "--setting",
        default="",
        help="keyword weight,k,depth to score beside the shipped constants, e.g. 0.75,2,100",
    )
    args = parser.parse_args()
    platform = connect_bench_database()
    try:
        found = bench_tenant(platform.catalog, args.tenant)
        if found is None:
            raise SystemExit(
                "no such tenant in the bench database (run bench/ingest_and_search.py)"
            )
        tenant = found
        model_key = platform.serving_model(tenant)
        engines = platform.search_engines(model_key)
        golden = beir_golden(args.beir, args.split)
        started = time.monotonic()
        recorded = record_legs(engines, tenant, golden)
        print(f"recorded {len(recorded)} queries in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        result = cross_validate(
            recorded, engines.vectors.model.semantic_floor, engines.policy, engines.reranker
        )
        print(f"cross-validated in {time.monotonic() - started:.1f} s")
        print(format_cross_validation(model_key, result))
        settings_scored = {"shipped": FusionSetting(engines.policy, MAX_DEPTH)}
        if args.setting:
            weight, k, depth = args.setting.split(",")
            settings_scored[args.setting] = FusionSetting(
                replace(
                    engines.policy,
                    rrf_k=int(k),
                    leg_weights=(("vector", 1.0), ("keyword", float(weight))),
                ),
                int(depth),
            )
        identifiers = record_legs(engines, tenant, identifier_golden(args.beir, args.identifiers))
        floor = engines.vectors.model.semantic_floor
        for label, setting in settings_scored.items():
            mrr = mrr_by_mode(identifiers, setting, floor, engines.reranker)
            print(
                f"identifier queries ({len(identifiers)}), {label}: MRR@10 "
                + "  ".join(f"{mode} {value:.3f}" for mode, value in mrr.items())
            )
    finally:
        platform.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
