"""Pipeline tier (issue 14): N real-language documents through the real
`tenant_ingest` Dagster job with the real embedding model, per-stage wall
time and throughput, and the share of the bare embedding time.

    uv run python bench/pipeline_tier.py --docs 2000             # a check
    uv run python bench/pipeline_tier.py --docs 20000 --bare-sample 0.2   # the tier
    uv run python bench/pipeline_tier.py --docs 20000 --tenants 4

The corpus is SciFact's 5,183 abstracts (../shared/data/scifact, or --beir);
the bench says so and exits 0 when it is absent. Beyond 5,183 documents each
further document is recombined from real abstracts, so every file is distinct
real language (registration would skip repeated bytes and the embedding cache
would reuse repeated chunks, which would flatter the figures): document k of
the corpus takes abstract k mod 5,183's title and sentences in a rotated order,
followed by a paragraph of sentences from another abstract.

The documents are written as Markdown into each tenant's inbox folder and
registered by the job's own first asset, then the job as the code location
defines it (`pipelines.definitions.build_definitions().resolve_job_def(
"tenant_ingest")`, in process, on an ephemeral Dagster instance) runs
register -> extract -> chunk -> summarize -> keyword index -> embed + publish.
Per stage it prints the step's wall time from Dagster's event log (what the
run waited for), the stage's own measured seconds (its `seconds` metadata),
documents/s and chunks/s. Then it embeds the same distinct chunk texts once
more with the same model and batch size (32, as `embed_pending` does), nothing
else, and prints that bare time's share of the run.

Uses its own database (groundwork_tier) and index prefix (gwtier) on the
engines under GROUNDWORK_HOME; stops engines it had to start. On a shared
machine the figures move with whatever else runs: repeat before trusting a
difference under ~20%.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg  # noqa: E402

from bench.engines import bench_platform  # noqa: E402
from bench.ingestion import (  # noqa: E402
    QUIET_RUN,
    bare_embedding_seconds,
    embedding_texts,
    settings_with_private_inbox,
)
from evals.beir import BeirDocument, load_corpus  # noqa: E402
from pipelines.definitions import build_definitions  # noqa: E402
from resources.composition.machine import available_cores  # noqa: E402
from resources.composition.platform import Platform  # noqa: E402
from resources.dagster_glue.platform_resource import GroundworkResource  # noqa: E402

#: its own database: a tier tenant left in groundwork_bench (24k chunks at 20,000
#: documents) became the largest there, and the search benches, which take the
#: largest tenant, then measured it instead of the SciFact one
DATABASE = "groundwork_tier"
PREFIX = "gwtier"
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared/data/scifact"
#: the same batch the embedding stage feeds the model (groundwork.stages.embeddings.embed_pending)
EMBED_BATCH = 32
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def tier_corpus(abstracts: list[BeirDocument], count: int) -> dict[str, str]:
    """`count` distinct Markdown documents of real language (see the module
    docstring for how documents beyond the abstracts are recombined)."""
    n = len(abstracts)
    docs: dict[str, str] = {}
    for k in range(count):
        base = abstracts[k % n]
        round_ = k // n
        if round_ == 0:
            docs[f"d{k:06d}-{base.doc_id}.md"] = base.to_markdown()
            continue
        own = _SENTENCE_END.split(base.text.strip()) or [base.text]
        turn = round_ % max(1, len(own))
        rotated = own[turn:] + own[:turn]
        # a different partner per round, spread over the corpus by a large prime stride
        other = abstracts[(k * 7919 + round_ * 104729) % n]
        theirs = _SENTENCE_END.split(other.text.strip())[:3]
        title = base.title.strip() or base.doc_id
        docs[f"d{k:06d}-{base.doc_id}-r{round_}.md"] = (
            f"# {title} (reading {round_ + 1})\n\n{' '.join(rotated)}\n\n"
            f"## Related: {other.title.strip() or other.doc_id}\n\n{' '.join(theirs)}\n"
        )
    return docs


@dataclass(frozen=True, slots=True)
class StageFigure:
    stage: str
    wall: float  # the step's wall time in the run (Dagster event log), 0 for logged-only events
    own: float  # the stage's own `seconds` metadata
    items: int  # items_written (chunks for chunk/embedding stages), 0 if the stage has none


def stage_figures(
    instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult
) -> list[StageFigure]:
    """Wall time per step from the run's event log, joined with each
    materialization's own seconds and items."""
    starts: dict[str, float] = {}
    walls: dict[str, float] = {}
    for record in instance.all_logs(result.run_id):
        event = record.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START:
            starts[event.step_key] = record.timestamp
        elif event.event_type in (
            dg.DagsterEventType.STEP_SUCCESS,
            dg.DagsterEventType.STEP_FAILURE,
        ):
            walls[event.step_key] = record.timestamp - starts.get(event.step_key, record.timestamp)
    figures: list[StageFigure] = []
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        name = materialization.asset_key.to_user_string()
        meta = materialization.metadata
        seconds = meta.get("seconds")
        items = meta.get("items_written")
        figures.append(
            StageFigure(
                stage=name,
                # serving_index logs the embeddings and published_index
                # materializations from inside its own step: only the step has a wall time
                wall=walls.get(name, 0.0) if event.step_key == name else 0.0,
                own=float(seconds.value) if seconds else 0.0,  # type: ignore[arg-type]
                items=int(items.value) if items else 0,  # type: ignore[arg-type]
            )
        )
    return figures


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--tenants", type=int, default=1, help="split the documents over N tenants")
    parser.add_argument(
        "--bare-sample",
        type=float,
        default=1.0,
        help="time the bare embedding on this fraction of the texts and scale it (0-1]",
    )
    parser.add_argument("--beir", type=Path, default=DEFAULT_CORPUS)
    return parser.parse_args()


def write_inboxes(folders: list[Path], corpus: dict[str, str]) -> None:
    """The documents dealt over the tenants' inbox folders, in name order."""
    names = sorted(corpus)
    for t, folder in enumerate(folders):
        folder.mkdir(parents=True, exist_ok=True)
        for name in names[t :: len(folders)]:
            (folder / name).write_text(corpus[name])


@dataclass(slots=True)
class RunTotals:
    """Per stage, over every tenant's run: [step wall, own seconds, items], in
    the order the stages first appeared; and the runs' wall time."""

    stages: dict[str, list[float]] = field(default_factory=dict)
    run_seconds: float = 0.0

    def add(self, figure: StageFigure) -> None:
        row = self.stages.setdefault(figure.stage, [0.0, 0.0, 0.0])
        row[0] += figure.wall
        row[1] += figure.own
        row[2] += figure.items

    def own(self, stage: str) -> float:
        return self.stages.get(stage, [0.0, 0.0, 0.0])[1]


def run_tier_job(tenants: list[str]) -> RunTotals | None:
    """The code location's `tenant_ingest` job, one in-process run per tenant;
    None when a run failed (said so)."""
    job = build_definitions(
        GroundworkResource(database=DATABASE, index_prefix=PREFIX)
    ).resolve_job_def("tenant_ingest")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenant", tenants)
    totals = RunTotals()
    for tenant in tenants:
        started = time.perf_counter()
        result = job.execute_in_process(
            partition_key=tenant, instance=instance, run_config=QUIET_RUN
        )
        totals.run_seconds += time.perf_counter() - started
        if not result.success:
            print(f"run for {tenant} failed")
            return None
        for figure in stage_figures(instance, result):
            totals.add(figure)
    return totals


def distinct_chunk_texts(platform: Platform, tenants: list[str]) -> tuple[list[str], int]:
    """The tenants' distinct chunk texts as the embedding stage embeds them, and
    how many chunks they have."""
    with platform.pool.connection() as conn:
        texts = embedding_texts(
            conn.execute(
                "SELECT DISTINCT ON (content_hash) heading_path, body FROM chunks "
                "WHERE tenant_id = ANY(%s) ORDER BY content_hash",
                (tenants,),
            ).fetchall()
        )
        (chunk_count,) = conn.execute(
            "SELECT count(*) FROM chunks WHERE tenant_id = ANY(%s)", (tenants,)
        ).fetchone() or (0,)
    return texts, chunk_count


def time_bare_embedding(platform: Platform, model: str, texts: list[str], fraction: float) -> float:
    """Seconds to embed every text in the stage's batches; with `fraction` < 1 a
    seeded sample, timed and scaled to every text: at 20,000 documents the bare
    pass alone is as long as the run (texts differ little in length)."""
    sample = texts
    if fraction < 1.0:
        sample = random.Random(14).sample(texts, max(1, int(len(texts) * fraction)))
    bare = bare_embedding_seconds(platform.embedder(model), sample, EMBED_BATCH)
    bare = bare * len(texts) / len(sample)
    if len(sample) < len(texts):
        print(
            f"bare embedding timed on a seeded sample of {len(sample)} of the {len(texts)} "
            "texts and scaled to all of them"
        )
    return bare


def print_stage_table(totals: RunTotals, documents: int, chunk_count: int) -> None:
    print(
        f"  {'stage':22s} {'step wall s':>11s} {'own s':>8s} {'share':>6s} "
        f"{'docs/s':>8s} {'chunks/s':>9s} {'items':>7s}"
    )
    # embeddings and published_index are logged by serving_index from inside its
    # step: their rows show their own seconds, which its step wall time includes
    for stage, (wall, own, items) in totals.stages.items():
        seconds = wall or own
        print(
            f"  {stage:22s} {wall:11.1f} {own:8.1f} {seconds / totals.run_seconds:6.1%} "
            f"{documents / seconds if seconds else 0:8.1f} "
            f"{chunk_count / seconds if seconds else 0:9.1f} {int(items):7d}"
        )
    run_seconds = totals.run_seconds
    print(
        f"  run wall (job.execute_in_process, all tenants): {run_seconds:.1f} s = "
        f"{documents / run_seconds:.1f} docs/s, {chunk_count / run_seconds:.1f} chunks/s"
    )


def print_against_bare(totals: RunTotals, texts: int, bare: float) -> None:
    run_seconds = totals.run_seconds
    print(
        f"bare embedding of the {texts} distinct chunk texts (batch {EMBED_BATCH}, same "
        f"model): {bare:.1f} s = {texts / bare:.1f} chunks/s; share of the run "
        f"{bare / run_seconds:.1%} (run / bare = {run_seconds / bare:.2f}x); embedding stage / "
        f"bare = {totals.own('embeddings') / bare:.2f}x"
    )
    stepped = {s: row[0] for s, row in totals.stages.items() if row[0] > 0}
    slowest = max(stepped, key=lambda s: stepped[s])
    inside = ""
    if slowest == "serving_index":
        embedding = totals.own("embeddings")
        publishing = totals.own("published_index")
        inside = (
            f": embedding {embedding:.1f} s ({embedding / run_seconds:.1%} of the run), "
            f"publication {publishing:.1f} s ({publishing / run_seconds:.1%})"
        )
    print(
        f"bottleneck stage (largest step wall time): {slowest} ({stepped[slowest]:.1f} s){inside}"
    )


def measure(
    args: argparse.Namespace,
    platform: Platform,
    model: str,
    tenants: list[str],
    folders: list[Path],
) -> int:
    """The tier corpus through the tenants' inboxes and the job, then the run
    against the bare embedding; 1 when a run failed."""
    abstracts = list(load_corpus(args.beir))
    corpus = tier_corpus(abstracts, args.docs)
    write_inboxes(folders, corpus)
    totals = run_tier_job(tenants)
    if totals is None:
        return 1
    texts, chunk_count = distinct_chunk_texts(platform, tenants)
    bare = time_bare_embedding(platform, model, texts, args.bare_sample)
    print(
        f"pipeline tier: {len(corpus)} documents (SciFact abstracts"
        f"{', recombined beyond the first ' + str(len(abstracts)) if len(corpus) > len(abstracts) else ''}"
        f"), {len(tenants)} tenant(s), {chunk_count} chunks, "
        f"model {model}, cores available {available_cores()}; shared machine, figures noisy"
    )
    print_stage_table(totals, len(corpus), chunk_count)
    print_against_bare(totals, len(texts), bare)
    return 0


def main() -> int:
    args = parse_args()
    if not (args.beir / "corpus.jsonl").is_file():
        print(f"skipped: no SciFact corpus at {args.beir} (pass --beir FOLDER)")
        return 0
    settings = settings_with_private_inbox()
    with bench_platform(settings, DATABASE, PREFIX) as platform:
        run = uuid.uuid4().hex[:6]
        tenants = [f"tier-{run}-{t}" for t in range(args.tenants)]
        folders = [settings.inbox_dir / tenant for tenant in tenants]
        try:
            return measure(args, platform, settings.default_model_key, tenants, folders)
        finally:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
