"""The static HTML eval report: tables per model and mode, groundedness (the
evidence inside the context, and the judged answers' claims, apart),
citation correctness, ragas, the per-query drill-down read from the run's
Parquet file with polars, and the history across stored runs, with inline SVG
charts (no scripts, no external assets: the file opens anywhere).

Charts are drawn to be read: every bar and point carries its value, the axis
is labelled and spans the range the values occupy (0.694 and 0.723 must not
look the same), and the gate's tolerance is drawn as a band.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any, Protocol

import polars as pl

from evals.gate import DEFAULT_TOLERANCE
from evals.retrieval import SINGLE_LEGS


class RunLike(Protocol):
    @property
    def run_id(self) -> str: ...
    @property
    def model_key(self) -> str: ...
    @property
    def results(self) -> dict[str, Any]: ...
    @property
    def ndcg_hybrid(self) -> float | None: ...
    @property
    def created_at(self) -> datetime: ...


_COLOURS = ("#3b6ea5", "#c8553d", "#588157", "#8e6c8a", "#d4a017")
WORST_PER_MODE = 5
SHOWN_SOURCES = 5


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def value_axis(values: Sequence[float], tolerance: float = 0.0) -> tuple[float, float]:
    """An axis range that shows the differences that matter: from a little below
    the lowest value (and its tolerance band) to a little above the highest, on
    0.05 steps, inside [0, 1]; at least 0.1 wide."""
    if not values:
        return 0.0, 1.0
    low, high = min(values) - tolerance, max(values)
    pad = max((high - low) * 0.15, 0.02)
    lo = max(0.0, math.floor((low - pad) / 0.05) * 0.05)
    hi = min(1.0, math.ceil((high + pad) / 0.05) * 0.05)
    if hi - lo < 0.1:
        lo, hi = max(0.0, hi - 0.1), max(hi, 0.1)
    return round(lo, 2), round(hi, 2)


class _Plot:
    """A y axis from `lo` to `hi` over a plotting area, with gridlines and ticks."""

    def __init__(self, lo: float, hi: float, width: int = 680, height: int = 260) -> None:
        self.lo, self.hi = lo, hi
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = 56, 170, 16, 46

    def y(self, value: float) -> float:
        span = (self.hi - self.lo) or 1.0
        inner = self.height - self.top - self.bottom
        clamped = min(max(value, self.lo), self.hi)
        return self.top + inner * (1 - (clamped - self.lo) / span)

    @property
    def x0(self) -> float:
        return float(self.left)

    @property
    def x1(self) -> float:
        return float(self.width - self.right)

    def axis(self, label: str) -> str:
        parts = []
        steps = 5
        for i in range(steps + 1):
            v = self.lo + (self.hi - self.lo) * i / steps
            y = self.y(v)
            parts.append(
                f'<line x1="{self.x0}" x2="{self.x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
                f'<text x="{self.x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{v:.2f}</text>'
            )
        parts.append(
            f'<line x1="{self.x0}" x2="{self.x0}" y1="{self.top}" y2="{self.height - self.bottom}" stroke="#888"/>'
            f'<text x="14" y="{self.top + (self.height - self.top - self.bottom) / 2:.1f}" font-size="11" '
            f'transform="rotate(-90 14 {self.top + (self.height - self.top - self.bottom) / 2:.1f})" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
        if self.lo > 0:
            parts.append(
                f'<text x="{self.x0}" y="{self.height - 4}" font-size="10" fill="#666">'
                f"axis starts at {self.lo:.2f}, not 0</text>"
            )
        return "".join(parts)

    def band(self, x_from: float, x_to: float, top: float, bottom: float, title: str) -> str:
        y_top, y_bottom = self.y(top), self.y(bottom)
        return (
            f'<rect x="{x_from:.1f}" y="{y_top:.1f}" width="{x_to - x_from:.1f}" '
            f'height="{max(y_bottom - y_top, 1):.1f}" fill="#f0c36d" fill-opacity="0.45" '
            f'stroke="#c28f1c" stroke-dasharray="4 2">'
            f"<title>{escape(title)}</title></rect>"
        )

    def legend(self, entries: Sequence[tuple[str, str]]) -> str:
        return "".join(
            f'<rect x="{self.x1 + 14}" y="{self.top + 16 * j}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{self.x1 + 28}" y="{self.top + 9 + 16 * j}" font-size="11">{escape(name)}</text>'
            for j, (name, colour) in enumerate(entries)
        )


def _svg(plot: _Plot, title: str, body: str) -> str:
    return (
        f'<svg viewBox="0 0 {plot.width} {plot.height}" role="img" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{body}</svg>'
    )


def _bars(
    title: str,
    series: dict[str, dict[str, float]],
    serving_model: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> str:
    """Grouped bars: groups = modes, one bar per model, each labelled with its
    value; the band under the serving model's hybrid bar is the gate's
    tolerance (a candidate model's hybrid bar must reach into it or above)."""
    modes = list(dict.fromkeys(m for values in series.values() for m in values))
    models = sorted(series)
    values = [v for s in series.values() for v in s.values()]
    gate_at = series.get(serving_model or "", {}).get("hybrid")
    plot = _Plot(*value_axis(values, tolerance if gate_at is not None else 0.0))
    group = (plot.x1 - plot.x0) / max(len(modes), 1)
    bar = group / (len(models) + 1)
    parts = [plot.axis("nDCG@10")]
    bands: list[str] = []  # drawn over the bars, translucent, so a bar cannot hide its band
    for i, mode in enumerate(modes):
        gx = plot.x0 + i * group
        if mode == "hybrid" and gate_at is not None:
            bands.append(
                plot.band(
                    gx + 2,
                    gx + group - 2,
                    gate_at,
                    gate_at - tolerance,
                    f"gate: a candidate's hybrid nDCG@10 must be at least {gate_at - tolerance:.3f} "
                    f"({serving_model} {gate_at:.3f} - tolerance {tolerance:.3f})",
                )
            )
        parts.append(
            f'<text x="{gx + group / 2:.1f}" y="{plot.height - plot.bottom + 16}" '
            f'text-anchor="middle" font-size="12">{escape(mode)}</text>'
        )
        for j, model in enumerate(models):
            if mode not in series[model]:
                continue
            value = series[model][mode]
            x = gx + j * bar + bar / 2
            y = plot.y(value)
            base = plot.y(plot.lo)
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.9:.1f}" height="{max(base - y, 1):.1f}" '
                f'fill="{_COLOURS[j % len(_COLOURS)]}"><title>{escape(model)} {escape(mode)} '
                f"{value:.3f}</title></rect>"
                f'<text x="{x + bar * 0.45:.1f}" y="{y - 4:.1f}" text-anchor="middle" '
                f'font-size="11">{value:.3f}</text>'
            )
    parts.extend(bands)
    entries = [(m, _COLOURS[j % len(_COLOURS)]) for j, m in enumerate(models)]
    if gate_at is not None:
        entries.append((f"gate band (-{tolerance:.2f})", "#f0c36d"))
    parts.append(plot.legend(entries))
    return _svg(plot, title, "".join(parts))


def _history(
    title: str,
    points: dict[str, list[tuple[datetime, float]]],
    tolerance: float = DEFAULT_TOLERANCE,
) -> str:
    """Hybrid nDCG@10 per stored run, oldest left, a line and a labelled point per
    run and model. Behind each run after a model's first, the regression
    check's band: from its previous run's value down by the tolerance."""
    stamps = sorted({when for series in points.values() for when, _ in series})
    values = [v for series in points.values() for _, v in series]
    plot = _Plot(*value_axis(values, tolerance))
    step = (plot.x1 - plot.x0 - 40) / max(len(stamps) - 1, 1)

    def x(when: datetime) -> float:
        return plot.x0 + 20 + stamps.index(when) * step

    parts = [plot.axis("hybrid nDCG@10")]
    for j, (model, series) in enumerate(sorted(points.items())):
        colour = _COLOURS[j % len(_COLOURS)]
        for (_, before), (when, _) in zip(series, series[1:], strict=False):
            parts.append(
                plot.band(
                    x(when) - 9,
                    x(when) + 9,
                    before,
                    before - tolerance,
                    f"{model}: previous run {before:.3f}; a drop below {before - tolerance:.3f} warns",
                )
            )
        if len(series) > 1:
            line = " ".join(f"{x(when):.1f},{plot.y(v):.1f}" for when, v in series)
            parts.append(
                f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for when, v in series:
            parts.append(
                f'<circle cx="{x(when):.1f}" cy="{plot.y(v):.1f}" r="4" fill="{colour}">'
                f"<title>{escape(model)} {when:%Y-%m-%d %H:%M} {v:.3f}</title></circle>"
                f'<text x="{x(when):.1f}" y="{plot.y(v) - 8:.1f}" text-anchor="middle" '
                f'font-size="11">{v:.3f}</text>'
            )
    for i, when in enumerate(stamps):
        if len(stamps) <= 8 or i % math.ceil(len(stamps) / 8) == 0:
            parts.append(
                f'<text x="{x(when):.1f}" y="{plot.height - plot.bottom + 16}" text-anchor="middle" '
                f'font-size="10">{when:%m-%d %H:%M}</text>'
            )
    entries = [(m, _COLOURS[j % len(_COLOURS)]) for j, m in enumerate(sorted(points))]
    entries.append((f"regression band (-{tolerance:.2f})", "#f0c36d"))
    parts.append(plot.legend(entries))
    return _svg(plot, title, "".join(parts))


def _sources(hits: Sequence[dict[str, Any]] | None) -> str:
    shown = [
        f"{h['rank']}. {h['source']}" + (f" ✓{h['grade']}" if h["grade"] else "")
        for h in (hits or [])[:SHOWN_SOURCES]
    ]
    return "; ".join(shown) or "(nothing retrieved)"


def drill_down(per_query_path: str) -> str:
    """The worst queries per mode and the queries where hybrid lost to a single
    leg, read from the run's Parquet file."""
    if not os.path.isfile(per_query_path):
        return f"<p>Per-query file {escape(per_query_path)} is not on this machine.</p>"
    frame = pl.read_parquet(per_query_path)
    parts = [
        f"<p>Per-query results: <code>{escape(per_query_path)}</code> "
        f"({frame.height} rows; <code>polars.read_parquet(path)</code>).</p>"
    ]
    if frame.is_empty():
        return "".join(parts)
    parts.append(
        f"<h3>Worst queries per mode</h3><p>Up to {WORST_PER_MODE} queries per mode below an ideal "
        "nDCG@10, lowest first: what was retrieved (✓grade: expected) beside what was expected.</p>"
    )
    for mode in frame["mode"].unique(maintain_order=True).to_list():
        worst = (
            frame.filter((pl.col("mode") == mode) & (pl.col("ndcg_at_10") < 1.0))
            .sort(["ndcg_at_10", "query_id"], nulls_last=True)
            .head(WORST_PER_MODE)
        )
        parts.append(f"<h4>{escape(mode)}</h4>")
        if worst.is_empty():
            parts.append("<p>Every query ranked its expected sources ideally.</p>")
            continue
        parts.append(
            _table(
                [
                    "query",
                    "nDCG@10",
                    "first relevant",
                    "retrieved",
                    "expected",
                    "evidence in context",
                ],
                [
                    [
                        row["query"],
                        row["ndcg_at_10"],
                        row["first_relevant_rank"] or "none",
                        _sources(row["hits"]),
                        ", ".join(row["gold_ids"]),
                        {True: "yes", False: "no", None: "n/a"}[row["context_contains_evidence"]],
                    ]
                    for row in worst.iter_rows(named=True)
                ],
            )
        )
    wide = frame.pivot(on="mode", index=["query_id", "query"], values="ndcg_at_10")
    legs = [leg for leg in SINGLE_LEGS if leg in wide.columns]
    if "hybrid" in wide.columns and legs:
        lost = (
            wide.with_columns(pl.max_horizontal(*legs).alias("best_leg"))
            .filter(pl.col("hybrid") < pl.col("best_leg"))
            .with_columns((pl.col("best_leg") - pl.col("hybrid")).alias("lost_by"))
            .sort("lost_by", descending=True)
        )
        parts.append(
            f"<h3>Queries where hybrid lost to a single leg ({lost.height})</h3>"
            "<p>Fusion ranked the expected sources lower than keyword or vector alone did.</p>"
        )
        if lost.height:
            parts.append(
                _table(
                    ["query", "hybrid", *legs, "lost by"],
                    [
                        [row["query"], row["hybrid"], *[row[leg] for leg in legs], row["lost_by"]]
                        for row in lost.head(20).iter_rows(named=True)
                    ],
                )
            )
    judged = frame.filter(
        pl.col("faithfulness").is_not_null() & (pl.col("mode") == "hybrid+rerank")
    )
    if judged.height:
        parts.append("<h3>Judged answers, least faithful first</h3>")
        parts.append(
            _table(
                ["query", "answer", "faithfulness", "answer relevancy"],
                [
                    [
                        row["query"],
                        row["answer"] or "",
                        row["faithfulness"],
                        row["answer_relevancy"],
                    ]
                    for row in judged.sort("faithfulness").head(10).iter_rows(named=True)
                ],
            )
        )
    return "".join(parts)


def render_report(
    tenant_id: str,
    runs: Sequence[RunLike],
    tolerance: float = DEFAULT_TOLERANCE,
    serving_model: str | None = None,
) -> str:
    """`runs` newest first (any models)."""
    latest: dict[str, RunLike] = {}
    for run in runs:
        latest.setdefault(run.model_key, run)
    sections: list[str] = [f"<h1>Retrieval evaluation: {escape(tenant_id)}</h1>"]
    if not runs:
        sections.append("<p>No eval runs yet.</p>")
    bars: dict[str, dict[str, float]] = {}
    for model, run in sorted(latest.items()):
        results = run.results
        sections.append(
            f"<h2>{escape(model)} <small>run {escape(run.run_id)} at {escape(run.created_at.isoformat())}</small></h2>"
        )
        relevance = results.get("relevance", [])
        bars[model] = {r["mode"]: float(r["ndcg_at_10"]) for r in relevance}
        sections.append(
            _table(
                ["mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10", "queries", "seconds"],
                [
                    [
                        r["mode"],
                        r["ndcg_at_10"],
                        r["recall_at_10"],
                        r["recall_at_100"],
                        r["mrr_at_10"],
                        r["queries"],
                        r["seconds"],
                    ]
                    for r in relevance
                ],
            )
        )
        grounding = results.get("groundedness", [])
        if grounding:
            sections.append("<h3>Groundedness (a): gold evidence inside the budgeted context</h3>")
            sections.append(
                _table(
                    [
                        "dataset",
                        "search",
                        "items",
                        "grounded",
                        "rate",
                        "document in hits",
                        "budget tokens",
                    ],
                    [
                        [
                            g["dataset"],
                            g.get("layer", "raw"),
                            g["items"],
                            g["grounded"],
                            g["rate"],
                            g["doc_in_hits_rate"],
                            g["budget_tokens"],
                        ]
                        for g in grounding
                    ],
                )
            )
        answers = results.get("answers", {})
        if answers:
            sections.append(
                "<h3>Groundedness (b): answer claims supported by the context (judge)</h3>"
            )
            rows: list[list[object]] = [[k, v] for k, v in answers.get("metrics", {}).items()]
            rows += [[k, f"skipped: {why}"] for k, why in answers.get("skipped", {}).items()]
            if answers.get("judge"):
                sections.append(
                    f"<p>Answers composed from the <code>/v1/context</code> text (cited, fenced as "
                    f"untrusted) for {answers.get('samples', 0)} queries; judge: "
                    f"{escape(answers['judge'])}.</p>"
                )
            else:
                sections.append("<p>No answers composed: no judge endpoint is configured.</p>")
            sections.append(_table(["metric", "value"], rows))
            errors = answers.get("errors", [])
            if errors:
                sections.append(
                    "<ul>" + "".join(f"<li>{escape(e)}</li>" for e in errors[:10]) + "</ul>"
                )
        citations = results.get("citations", {})
        if citations:
            sections.append(
                f"<h3>Citation correctness</h3><p>{citations.get('verified', 0)} of "
                f"{citations.get('checked', 0)} citations verified ({float(citations.get('rate', 0.0)):.3f}).</p>"
            )
            misses = citations.get("misses", [])
            if misses:
                sections.append(
                    _table(
                        ["chunk", "version", "location", "reason"],
                        [
                            [m["chunk_id"], m["version_id"], m["location"], m["reason"]]
                            for m in misses
                        ],
                    )
                )
        ragas = results.get("ragas", {})
        if ragas:
            ragas_rows: list[list[object]] = [[k, v] for k, v in ragas.get("metrics", {}).items()]
            ragas_rows += [[k, f"skipped: {why}"] for k, why in ragas.get("skipped", {}).items()]
            sections.append(f"<h3>ragas context metrics ({ragas.get('samples', 0)} samples)</h3>")
            sections.append(_table(["metric", "value"], ragas_rows))
        per_query = results.get("per_query_path")
        if per_query:
            sections.append(drill_down(str(per_query)))
    if bars:
        sections.append("<h2>nDCG@10 by mode and model (latest runs)</h2>")
        sections.append(_bars("nDCG@10 by mode", bars, serving_model, tolerance))
    history: dict[str, list[tuple[datetime, float]]] = {}
    for run in reversed(runs):
        if run.ndcg_hybrid is not None:
            history.setdefault(run.model_key, []).append((run.created_at, float(run.ndcg_hybrid)))
    if history:
        sections.append(
            f"<h2>History: hybrid nDCG@10 per stored run ({sum(map(len, history.values()))} runs)</h2>"
        )
        sections.append(_history("hybrid nDCG@10 over runs", history, tolerance))
        sections.append(
            _table(
                ["run", "model", "when", "hybrid nDCG@10"],
                [
                    [r.run_id, r.model_key, r.created_at.isoformat(), r.ndcg_hybrid or 0.0]
                    for r in runs
                ],
            )
        )
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1080px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right;vertical-align:top}td:first-child,th:first-child{text-align:left}"
        "svg{max-width:100%;font-family:system-ui,sans-serif}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Eval {escape(tenant_id)}</title>"
        f"<style>{style}</style></head><body>{''.join(sections)}</body></html>"
    )
