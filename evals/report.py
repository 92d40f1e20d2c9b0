"""The static HTML eval report: tables per model and mode, groundedness,
citation correctness, ragas, and the history across runs, with inline SVG
charts (no scripts, no external assets: the file opens anywhere)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any, Protocol


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


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _bars(title: str, series: dict[str, dict[str, float]]) -> str:
    """Grouped bars: groups = modes, one bar per model."""
    modes = sorted({m for values in series.values() for m in values})
    models = sorted(series)
    width, height, pad = 640, 220, 30
    group = (width - 2 * pad) / max(len(modes), 1)
    bar = group / (len(models) + 1)
    parts = [f'<svg viewBox="0 0 {width} {height + 40}" role="img"><title>{escape(title)}</title>']
    for i, mode in enumerate(modes):
        x0 = pad + i * group
        parts.append(
            f'<text x="{x0 + group / 2:.1f}" y="{height + 20}" text-anchor="middle" font-size="12">{escape(mode)}</text>'
        )
        for j, model in enumerate(models):
            value = series[model].get(mode, 0.0)
            h = value * (height - 10)
            parts.append(
                f'<rect x="{x0 + j * bar + bar / 2:.1f}" y="{height - h:.1f}" width="{bar * 0.9:.1f}" '
                f'height="{h:.1f}" fill="{_COLOURS[j % len(_COLOURS)]}"><title>{escape(model)} {value:.3f}</title></rect>'
            )
    parts.append(_legend(models, width))
    parts.append("</svg>")
    return "".join(parts)


def _lines(title: str, series: dict[str, list[float]]) -> str:
    width, height, pad = 640, 200, 30
    longest = max((len(v) for v in series.values()), default=1)
    parts = [f'<svg viewBox="0 0 {width} {height + 30}" role="img"><title>{escape(title)}</title>']
    for j, (_model, values) in enumerate(sorted(series.items())):
        if not values:
            continue
        step = (width - 2 * pad) / max(longest - 1, 1)
        points = " ".join(
            f"{pad + i * step:.1f},{height - v * (height - 10):.1f}" for i, v in enumerate(values)
        )
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{_COLOURS[j % len(_COLOURS)]}" stroke-width="2"/>'
        )
    parts.append(_legend(sorted(series), width))
    parts.append("</svg>")
    return "".join(parts)


def _legend(models: Sequence[str], width: int) -> str:
    return "".join(
        f'<text x="{width - 200}" y="{14 + 14 * j}" font-size="12" fill="{_COLOURS[j % len(_COLOURS)]}">{escape(m)}</text>'
        for j, m in enumerate(models)
    )


def render_report(tenant_id: str, runs: Sequence[RunLike]) -> str:
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
            sections.append("<h3>Groundedness (gold evidence inside the budgeted context)</h3>")
            sections.append(
                _table(
                    ["dataset", "items", "grounded", "rate", "document in hits", "budget tokens"],
                    [
                        [
                            g["dataset"],
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
            rows: list[list[object]] = [[k, v] for k, v in ragas.get("metrics", {}).items()]
            rows += [[k, f"skipped: {why}"] for k, why in ragas.get("skipped", {}).items()]
            sections.append(f"<h3>ragas ({ragas.get('samples', 0)} samples)</h3>")
            sections.append(_table(["metric", "value"], rows))
    if bars:
        sections.append("<h2>nDCG@10 by mode and model (latest runs)</h2>")
        sections.append(_bars("nDCG@10 by mode", bars))
    history: dict[str, list[float]] = {}
    for run in reversed(runs):
        if run.ndcg_hybrid is not None:
            history.setdefault(run.model_key, []).append(float(run.ndcg_hybrid))
    if history:
        sections.append("<h2>History: hybrid nDCG@10 per run</h2>")
        sections.append(_lines("hybrid nDCG@10 over runs", history))
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
        "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}svg{max-width:100%}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>Eval {escape(tenant_id)}</title>"
        f"<style>{style}</style></head><body>{''.join(sections)}</body></html>"
    )
