"""Reports: a terminal table (rich), JSON, PNG plots per scenario (matplotlib, Agg) and one
self-contained HTML page that embeds them (base64 PNGs)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autoscaler.strictjson import NULL_REASONS, dumps_strict, strict_json
from simulations.runner import RunResult
from simulations.scenario import Scenario, demand_replicas
from simulations.trace import BinnedWorkload, Trace


def _fmt_s(x: float) -> str:
    if not np.isfinite(x):
        return "∞"
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


__all__ = ["NULL_REASONS", "dumps_strict", "strict_json", "write_json"]


def write_json(path: Path, payload: Any) -> None:
    """Strict JSON (no Infinity/NaN: see `strict_json`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_strict(payload) + "\n", encoding="utf-8")


def plot_scenario(scenario: Scenario, workload: Trace | BinnedWorkload, results: Sequence[RunResult],
                  out_dir: Path) -> list[Path]:
    """Three PNGs: demand vs ready capacity, replicas (desired) per policy, TTFT p90 per minute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    demand = demand_replicas(workload, scenario.serving, 1.0)
    per = 60
    n = len(demand) // per
    hours = long_run = len(demand) > 3 * 86400
    scale, unit = (3600.0, "hours") if long_run else (60.0, "minutes")
    del hours
    dm = demand[: n * per].reshape(n, per).mean(axis=1) if n else demand
    t_dm = np.arange(len(dm)) * per / scale
    paths = []

    fig, ax = plt.subplots(figsize=(10, 4))
    ax.fill_between(t_dm, dm, step="post", alpha=0.3, color="grey", label="demand (replicas at batch 64, 1-min mean)")
    for r in results:
        ax.step(r.series_t / scale, r.series_ready, where="post", lw=1, label=f"{r.label} ready")
    ax.set_xlabel(unit)
    ax.set_ylabel("replicas")
    ax.set_title(f"{scenario.name}: demand vs ready capacity")
    ax.legend(fontsize=7, loc="upper left")
    paths.append(_save(fig, out_dir / f"{scenario.name}-capacity.png"))

    fig, ax = plt.subplots(figsize=(10, 4))
    for r in results:
        ax.step(r.series_t / scale, r.series_desired, where="post", lw=1, label=r.label)
    ax.set_xlabel(unit)
    ax.set_ylabel("desired replicas")
    ax.set_title(f"{scenario.name}: replicas per policy")
    ax.legend(fontsize=7, loc="upper left")
    paths.append(_save(fig, out_dir / f"{scenario.name}-replicas.png"))

    fig, ax = plt.subplots(figsize=(10, 4))
    for r in results:
        ax.plot(r.ttft_t / scale, np.clip(r.ttft_p90, 1e-3, 1e4), lw=1, label=r.label)
    ax.axhline(scenario.slo.ttft_seconds, color="red", ls="--", lw=1, label="SLO")
    ax.set_yscale("log")
    ax.set_xlabel(f"{unit} (arrival)")
    ax.set_ylabel("TTFT p90 per minute (s)")
    ax.set_title(f"{scenario.name}: TTFT over time")
    ax.legend(fontsize=7, loc="upper left")
    paths.append(_save(fig, out_dir / f"{scenario.name}-ttft.png"))
    plt.close("all")
    return paths


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


Section = tuple[str, str, Sequence[RunResult], Sequence[Path]]  # heading, description, results, PNGs


def write_html(path: Path, title: str, sections: Sequence[Section]) -> None:
    """One page: per section a heading, a description, the results table and the embedded PNGs."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child{text-align:left}"
             ".miss{color:#b00}.ok{color:#070}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for heading, description, results, pngs in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2><p>{html.escape(description)}</p><table><tr>")
        parts.append("".join(f"<th>{h}</th>" for h in ("policy", "attainment", "GPU-h", "TTFT p50", "p90", "p99",
                                                         "queue p99", "scale events", "infeasible",
                                                         "aborted")))
        parts.append("</tr>")
        for r in results:
            o = r.outcome
            cls = "ok" if o.attainment >= 0.99 else "miss"
            parts.append(
                f"<tr><td>{html.escape(r.label)}</td><td class='{cls}'>{100 * o.attainment:.2f}%</td>"
                f"<td>{o.gpu_hours:.2f}</td><td>{_fmt_s(o.ttft_p50_seconds)}</td><td>{_fmt_s(o.ttft_p90_seconds)}</td>"
                f"<td>{_fmt_s(o.ttft_p99_seconds)}</td><td>{_fmt_s(o.queue_p99_seconds)}</td><td>{o.scale_events}</td>"
                f"<td>{100 * o.infeasible_share:.2f}%</td>"
                f"<td>{f'{o.aborted:.0f}' if o.aborted_counted else '–'}</td></tr>")
        parts.append("</table>")
        for p in pngs:
            data = base64.b64encode(p.read_bytes()).decode("ascii")
            parts.append(f"<p><img alt='{html.escape(p.name)}' src='data:image/png;base64,{data}'></p>")
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
