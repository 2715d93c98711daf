"""Backtest output: a summary table, JSON, and a PNG of replicas over time beside the demand."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from autoscaler.backtest.replay import BacktestResult
from autoscaler.strictjson import dumps_strict


def write_plot(result: BacktestResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [datetime.fromtimestamp(x, tz=timezone.utc) for x in result.times]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    ax1.step(t, result.actual, where="post", label="actual (replicas exposing metrics)", color="tab:gray")
    ax1.step(t, result.ours, where="post", label="backtest: desired", color="tab:blue")
    ax1.step(t, result.ours_ready, where="post", label="backtest: ready (simulated cold start)",
             color="tab:blue", alpha=0.4, linestyle="--")
    ax1.set_ylabel("replicas")
    ax1.set_title(f"Backtest of {result.policy_key}")
    ax1.legend(loc="upper left", fontsize=8)
    ax1.grid(alpha=0.3)
    ax2.plot(t, result.demand_prompt_tokens_per_s, color="tab:orange")
    ax2.set_ylabel("prompt tokens/s")
    ax2.set_xlabel("time (UTC)")
    ax2.grid(alpha=0.3)
    s = result.summary()
    lines = []
    for who in ("ours", "actual"):
        e = s[who]["estimate"]
        if e:
            lines.append(f"{who}: attainment {e['attainment']:.3f}, GPU-h {e['gpu_hours']:.2f}")
    if lines:
        ax1.text(0.99, 0.97, "\n".join(lines), transform=ax1.transAxes, ha="right", va="top", fontsize=8,
                 bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"})
    fig.autofmt_xdate()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def table(result: BacktestResult) -> str:
    s = result.summary()
    rows = [("", "backtest", "actual")]

    def est(who: str, key: str, fmt: str) -> str:
        e = s[who]["estimate"]
        return "-" if not e or e[key] is None else format(e[key], fmt)

    rows += [
        ("mean replicas", f"{s['ours']['mean_replicas']:.2f}",
         "-" if s["actual"]["mean_replicas"] is None else f"{s['actual']['mean_replicas']:.2f}"),
        ("max replicas", str(s["ours"]["max_replicas"]), str(s["actual"]["max_replicas"] or "-")),
        ("replica-hours", f"{s['ours']['replica_hours']:.2f}", f"{s['actual']['replica_hours']:.2f}"),
        ("est. TTFT SLO attainment", est("ours", "attainment", ".4f"), est("actual", "attainment", ".4f")),
        ("est. TTFT p90 (s)", est("ours", "ttft_p90_seconds", ".2f"), est("actual", "ttft_p90_seconds", ".2f")),
        ("est. GPU-hours", est("ours", "gpu_hours", ".2f"), est("actual", "gpu_hours", ".2f")),
    ]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    out = [f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:>{w[2]}}" for r in rows]
    out.append("")
    out.append(f"{s['steps']} steps of {s['step_seconds']:g}s; decisions: "
               + ", ".join(f"{k} {v}" for k, v in sorted(s["reasons"].items())))
    out.append(f"estimates: {s['estimate_method']}")
    out += [f"note: {n}" for n in s["notes"]]
    return "\n".join(out)


def write_outputs(result: BacktestResult, out_dir: str | Path) -> dict[str, Path]:
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    summary = d / "backtest.json"
    summary.write_text(dumps_strict({
        **result.summary(),
        "series": {
            "time": [float(x) for x in result.times],
            "ours": [int(x) for x in result.ours],
            "ours_ready": [int(x) for x in result.ours_ready],
            "actual": [None if not np.isfinite(x) else int(x) for x in result.actual],
            "reason": result.reasons,
        },
    }, indent=1))
    return {"json": summary, "png": write_plot(result, d / "backtest.png")}
