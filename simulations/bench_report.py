"""What `bench` writes: the markdown table (docs and README), the frontier plots and the runs as a
DataFrame (CSV + strict JSON). Pure rendering of `simulations.bench` records; nothing is recomputed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulations.bench import BASELINES, NUDGES, OFF_PRIORS, TARGET, machine, priors_key
from simulations.fidelity import FLUID_AGREES_ON_SIGNAL
from simulations.report import strict_json, write_json
from simulations.search import fmt

# Scenarios the default policy's constants were tuned against (all six that existed when they were
# chosen); every other scenario is evaluation-only (docs/benchmarks.md, "Protocol").
TUNED_ON = frozenset({"azure-code", "azure-conv", "diurnal", "flash-crowd", "servegen-large", "servegen-mid"})
FLOOR_MISS_PCT = 0.01  # plotted for runs with no miss at all (a log axis has no zero)
COLORS = {"ours": "tab:red", "static": "tab:gray", "hpa": "tab:blue", "keda": "tab:orange", "kpa": "tab:green",
          "oracle": "black"}


def runs_frame(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per replay the bench ran (every point every search visited)."""
    rows = []
    for rec in records:
        sec = ", ".join(f"{k}={fmt(v)}" for k, v in rec["secondary"].items())
        for p in rec["points"]:
            rows.append({"scenario": rec["scenario"], "family": rec["family"], "kind": rec["kind"],
                         "secondary": sec, "priors_scale": rec["priors_scale"], "fleet_mode": rec["fleet_mode"],
                         **{k: v for k, v in p.items() if k not in ("policy",)}})
    return pd.DataFrame(rows)


def write_runs(out_dir: Path, records: Sequence[dict[str, Any]]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    df = runs_frame(records)
    csv, js = out_dir / "bench-runs.csv", out_dir / "bench-runs.json"
    df.to_csv(csv, index=False)
    write_json(js, strict_json(df.to_dict(orient="records")))
    return [csv, js]


# ---------------------------------------------------------------- plots


def frontier_plot(scenario: str, records: Sequence[dict[str, Any]], path: Path) -> Path:
    """Share of requests missing the SLO (log, inverted: better is up) vs GPU-hours (log): per family every
    visited point (faint) and its envelope (the fewest misses available at that cost or less); ours as
    shipped as a star, with its priors ×0.7 / ×1.3 as triangles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    def miss(att: float) -> float:
        return max(100.0 * (1.0 - att), FLOOR_MISS_PCT)

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    for fam in ("ours", *BASELINES, "oracle"):
        raw = [(p["gpu_hours"], p["attainment"]) for r in records
               if r["scenario"] == scenario and r["family"] == fam and r["kind"] == "search" for p in r["points"]]
        if not raw:
            continue
        pts = [(g, miss(a)) for g, a in raw]
        env = [(g, miss(a)) for g, a in envelope(raw)]
        c = COLORS[fam]
        ax.scatter([g for g, _ in pts], [m for _, m in pts], s=9, color=c, alpha=0.35)
        ax.step([g for g, _ in env], [m for _, m in env], where="post", color=c, lw=1.5,
                label="ours (tuned)" if fam == "ours" else fam)
    for r in records:  # the nudged runs would sit on the star: they are the priors table's
        if r["scenario"] == scenario and r["kind"] == "default" and r["priors_scale"] not in NUDGES:
            w = r["winner"]
            k = r["priors_scale"]
            ax.scatter([w["gpu_hours"]], [miss(w["attainment"])], marker="*" if k == 1 else ("v" if k < 1 else "^"),
                       s=160 if k == 1 else 50, color=COLORS["ours"], edgecolor="black", zorder=5,
                       label="ours (default policy)" if k == 1 else f"ours, priors ×{k:g}")
    ax.axhline(100 * (1 - TARGET), color="red", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylim(100, FLOOR_MISS_PCT * 0.8)  # inverted: fewer misses is up
    ax.set_xlabel("GPU-hours (log)")
    ax.set_ylabel("requests missing the TTFT SLO (%, log)")
    ax.set_title(f"{scenario}: misses vs cost (dashed: the 99% target; up and left is better)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- markdown


def display(family: str) -> str:
    return "ours (tuned)" if family == "ours_tuned" else family


def _cell(f: dict[str, Any] | None, setting: bool = True, decimals: int = 1) -> str:
    """A run's cell: its GPU-hours, or ✗ and its attainment to `decimals` places; with its setting if asked."""
    if f is None:
        return "–"
    said = f"{f['gpu_hours']:.2f}" if f["reached"] else f"✗ {100 * f['attainment']:.{decimals}f}%"
    return said + (f" ({f['setting']})" if setting and f["setting"] else "")


def with_infeasible_share(table: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each headline row with `infeasible_share`: the share of the scenario's requests whose TTFT SLO even an
    idle replica misses, left out of every attainment (simulations/feasibility.py). It is the workload's, the
    same for every run; the largest over the runs is taken (a quick run may see a shorter trace)."""
    out = []
    for row in table:
        shares = [float(p.get("infeasible_share", 0.0)) for r in records if r["scenario"] == row["scenario"]
                  for p in r.get("points") or ()]
        out.append({**row, "infeasible_share": max(shares, default=0.0)})
    return out


def _infeasible(row: dict[str, Any]) -> str:
    share = row.get("infeasible_share")
    return "–" if share is None else f"{100 * share:.2f}%"


def _ratio(x: float | None) -> str:
    return f"{x:.2f}" if x is not None else "–"


def verdict(row: dict[str, Any]) -> str:
    ours = row["families"]["ours"]
    if ours is None:
        return "not run"
    r = row["ours_over_best_baseline"]
    if not ours["reached"]:
        said = f"**miss**: ours reaches {100 * ours['attainment']:.1f}%"
    elif r is None:
        said = "**win**: no tuned baseline reaches 99%"
    else:
        said = f"**{'win' if r < 1 else 'loss'}**: {r:.2f}× {row['best_baseline']}"
    return said + fragile(row)


def nudged(f: dict[str, Any] | None) -> str:
    """A nudged run's cell: its GPU-hours, or ✗ and its attainment to two decimals (one would read 99.0%)."""
    return _cell(f, False, decimals=2)


def fragile(row: dict[str, Any]) -> str:
    """'' or ', not robust: …': the runs with every prior ×0.9999 or ×1.0001 whose verdict differs."""
    flips = row.get("fragile") or []
    if not flips:
        return ""
    return ", not robust: " + "; ".join(f"{nudged(row['priors'][k])} with every prior ×{k}" for k in flips)


def markdown(table: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], command: str, quick: bool,
             wall_seconds: float, plots: dict[str, str] | None = None) -> str:
    lines = _header(records, command, quick, wall_seconds) + _headline(table)
    lines += ["", "Fleet model per scenario and family (`simulations.fidelity.fleet_mode`): " + _modes(records) + "."]
    partial = [f"{fam} on {' / '.join(sorted(sigs))}" for fam, sigs in sorted(FLUID_AGREES_ON_SIGNAL.items())]
    if partial and any(r.get("fleet_mode") == "fluid" for r in records):
        lines += ["", "On fluid scenarios the families validated there for some signals only are searched on "
                  "those signals (" + ", ".join(partial) + "); their other signals are not run there: the fluid "
                  "fleet disagrees with the request-level one on them and a day of requests does not fit a "
                  "request-level replay (docs/vllm-replica-model.md, \"Fluid and request-level\")."]
    lines += _aborted_table(table, records)
    exact = [row["scenario"] for row in table
             if (row["families"].get("static") or {}).get("reached") and row["families"]["static"].get("exact")]
    if exact:
        lines += ["", f"Static fleets are exact in {len(exact)} of {len(table)} scenarios: one replica fewer "
                  "was replayed and misses 99%."]
    lines += _priors_table(table)
    lines += curve_comparison(table, records)
    notes = _notes(table)
    if notes:
        lines += ["", "Search notes:", "", *notes]
    if plots:
        lines += ["", "Attainment vs GPU-hours per scenario (every point the searches visited; line = the best "
                  "attainment at that cost or less):", ""]
        lines += [f"![{name} frontier]({rel})" for name, rel in plots.items()]
    lines.append("")
    return "\n".join(lines)


def _header(records: Sequence[dict[str, Any]], command: str, quick: bool, wall_seconds: float) -> list[str]:
    """The section's title, the command and machine, and how to read a cell."""
    m = machine()
    runs = sum(r["runs"] for r in records)
    cpu = sum(r.get("cpu_seconds", 0.0) for r in records)
    return [
        "## Decision quality: cost to reach 99% TTFT-SLO attainment",
        "",
        f"Command: `{command}`  ",
        f"Machine: {m['cpus']} CPUs, Python {m['python']}; {len(records)} jobs, {runs} replays, "
        f"{wall_seconds / 60:.1f} min wall on a shared machine, {cpu / 60:.1f} CPU-minutes in the jobs "
        f"(≈ {cpu / 120:.1f} min on 2 idle cores)."
        + (" Quick mode: shorter traces, 30% brackets for continuous knobs; of the behaviour knobs only the signal "
           "(HPA, KEDA) and Knative's scale-down delay are crossed (`simulations/search.py`)."
           if quick else ""),
        "",
        "Each cell: GPU-hours of the cheapest setting found that keeps ≥ 99% of requests within the 2 s TTFT "
        "SLO (lower is better), with the setting; ✗ = nothing within the knob's bounds reached 99% (best "
        "attainment shown). Attainment counts the requests whose TTFT SLO an idle replica can meet; the "
        "`infeasible` column is the share whose prompt is too long for that (docs/slo.md). "
        "Ours is the shipped default policy, untuned; every baseline's main knob is "
        "searched by bisection" + ("" if quick else ", crossed with its behaviour knobs") + " (see the protocol "
        "below). Ratios below 1 are wins for ours, above 1 losses.",
        "",
    ]


def _headline(table: Sequence[dict[str, Any]]) -> list[str]:
    """The headline table: each family's cheapest setting at 99%, the ratios and the verdict per scenario."""
    lines = ["| scenario | tuned on? | ours (default) | static | hpa | keda | kpa | oracle | ours / cheapest "
             "baseline | ours / oracle | verdict | infeasible |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        f = row["families"]
        oracle = _cell(f.get("oracle"))
        if row["oracle_broken"]:
            oracle += f" ⚠ **not a bound** (beaten by {', '.join(display(b) for b in row['oracle_beaten_by'])})"
        lines.append(
            f"| {row['scenario']} | {'yes' if row['scenario'] in TUNED_ON else 'no (evaluation only)'} | "
            f"{_cell(f.get('ours'), False)} | " + " | ".join(_cell(f.get(b)) for b in BASELINES)
            + f" | {oracle} | {_ratio(row['ours_over_best_baseline'])} | {_ratio(row['ours_over_oracle'])} | "
            f"{verdict(row)} | {_infeasible(row)} |")
    return lines


def _priors_table(table: Sequence[dict[str, Any]]) -> list[str]:
    """Ours with every prior ±30% and nudged ±0.01%, beside ours as shipped and ours tuned."""
    down, up = map(priors_key, OFF_PRIORS)
    near = [priors_key(k) for k in NUDGES]
    lines = ["", "Ours with every prior (capacity and cold-start medians) off by ±30%, nudged by ±0.01% (physically "
             "nothing: where a nudge changes the verdict the verdict is one path of the learner's, marked \"not "
             "robust\" above; docs/benchmarks.md, \"The replay set's noise floor\"), and ours with its "
             "utilisation knob searched (its frontier; not the headline):", "",
             f"| scenario | priors ×{down} | priors ×{near[0]} | as shipped | priors ×{near[1]} | priors ×{up} "
             "| ours tuned |", "|---|---|---|---|---|---|---|"]
    for row in table:
        f, p = row["families"], row["priors"]
        lines.append(f"| {row['scenario']} | {_cell(p.get(down), False)} | {nudged(p.get(near[0]))} | "
                     f"{_cell(f.get('ours'), False)} | {nudged(p.get(near[1]))} | {_cell(p.get(up), False)} | "
                     f"{_cell(f.get('ours_tuned'))} |")
    return lines


def _points(records: Sequence[dict[str, Any]], scenario: str, family: str) -> list[tuple[float, float]]:
    """(GPU-hours, attainment) of every replay of `family` on `scenario` (ours: its searched knob and the
    shipped policy), by cost."""
    pts = [(float(p["gpu_hours"]), float(p["attainment"])) for r in records
           if r["scenario"] == scenario and r["family"] == family
           and (r["kind"] == "search" or (r["kind"] == "default" and r["priors_scale"] == 1)) for p in r["points"]]
    return sorted(pts)


def envelope(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points that raise the best attainment reached at that cost or less (the frontier's steps)."""
    out, best = [], -math.inf
    for g, a in sorted(points):
        if a > best:
            best = a
            out.append((g, a))
    return out


def best_within(points: Sequence[tuple[float, float]], cost: float) -> float | None:
    """The best attainment among `points` costing at most `cost` (None: none is that cheap)."""
    got = [a for g, a in points if g <= cost * (1 + 1e-9)]
    return max(got) if got else None


def curve_comparison(table: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[str]:
    """Per scenario and baseline: at how many of the baseline's frontier steps ours' frontier reaches at
    least the same attainment for no more GPU-hours (ours above or on that curve there)."""
    lines = ["", "Curves compared: at how many of each baseline's frontier steps (cost, attainment) ours' frontier "
             "(the shipped policy and its searched utilisation knob) reaches at least that attainment for no more "
             "GPU-hours, over the costs ours' frontier covers. `k/n ✓`: ours' curve lies on or above the baseline's "
             "at every one of them; steps cheaper than the cheapest setting of ours visited are counted apart.", "",
             "| scenario | " + " | ".join(BASELINES) + " |", "|---|" + "---|" * len(BASELINES)]
    for row in table:
        sc = row["scenario"]
        ours = _points(records, sc, "ours")
        cells = []
        for b in BASELINES:
            steps = envelope(_points(records, sc, b))
            if not ours or not steps:
                cells.append("–")
                continue
            cheapest = ours[0][0]
            inside = [(g, a) for g, a in steps if g >= cheapest * (1 - 1e-9)]
            above = sum(1 for g, a in inside if (best_within(ours, g) or -1.0) >= a - 1e-12)
            below = len(steps) - len(inside)
            cells.append(f"{above}/{len(inside)}" + (" ✓" if inside and above == len(inside) else "")
                         + (f" (+{below} cheaper than ours)" if below else ""))
        lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    return lines


def _winner_record(records: Sequence[dict[str, Any]], scenario: str, family: str,
                   summary: dict[str, Any]) -> dict[str, Any] | None:
    """The run behind a family's summary cell (its winner: same setting and GPU-hours), if there is one."""
    for rec in records:
        w = rec.get("winner") or {}
        if (rec["scenario"] == scenario and rec["family"] == family and rec.get("priors_scale", 1.0) == 1.0
                and w.get("setting") == summary.get("setting") and w.get("gpu_hours") == summary.get("gpu_hours")):
            return w
    return None


def _aborted_table(table: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[str]:
    """Requests a scale-down aborted at each family's cell above (a removed replica still held them when its
    termination grace period ran out; docs/scale-down.md). "–": not counted (the fluid model drains without
    a grace period) or no single run behind the cell."""
    fams = ["ours", *BASELINES]
    lines = ["", "Requests aborted by scale-downs in those runs (ours removes the replicas with the fewest "
             "in-flight requests through pod-deletion-cost; the baselines get the ReplicaSet's default choice; "
             "every replica drains for the documented grace period; – = not counted, fluid model):", "",
             "| scenario | " + " | ".join(display(f) if f != "ours" else "ours (default)" for f in fams) + " |",
             "|---" * (len(fams) + 1) + "|"]
    for row in table:
        cells = []
        for fam in fams:
            summary = row["families"].get(fam)
            w = _winner_record(records, row["scenario"], fam, summary) if summary else None
            cells.append(f"{w['aborted']:,.0f}" if w and w.get("aborted_counted") else "–")
        lines.append(f"| {row['scenario']} | " + " | ".join(cells) + " |")
    return lines


def _modes(records: Sequence[dict[str, Any]]) -> str:
    out = []
    for name in dict.fromkeys(r["scenario"] for r in records):
        modes: dict[str, list[str]] = {}
        for r in records:
            if r["scenario"] == name and r["family"] not in modes.get(r["fleet_mode"], []):
                modes.setdefault(r["fleet_mode"], []).append(r["family"])
        if len(modes) == 1:
            out.append(f"{name} {next(iter(modes))}")
        else:
            out.append(f"{name} " + ", ".join(f"{m} ({', '.join(f)})" for m, f in modes.items()))
    return "; ".join(out)


def _notes(table: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for row in table:
        for fam, f in row["families"].items():
            if f is None:
                continue
            if f.get("monotone") is False:
                out.append(f"- {row['scenario']} / {display(fam)}: attainment was not monotone in the knob in at least "
                           "one search; the cheapest visited point reaching 99% is reported.")
            if fam == "static" and f["reached"] and not f.get("exact") and f.get("stopped_by") == "":
                out.append(f"- {row['scenario']} / static: the winner is not bracketed by a miss one replica below.")
            if f.get("stopped_by") and not f["reached"]:
                out.append(f"- {row['scenario']} / {display(fam)}: {f['stopped_by']} (search bound), best "
                           f"{100 * f['attainment']:.1f}%.")
    return out


def readme_summary(table: Sequence[dict[str, Any]], command: str) -> str:
    """The README's "Results so far": counts of wins, losses and misses, each named, from the table."""
    wins, losses, misses = [], [], []
    for row in table:
        ours, r = row["families"]["ours"], row["ours_over_best_baseline"]
        tag = "" if row["scenario"] in TUNED_ON else " (evaluation only)"
        if ours is None or not ours["reached"]:
            att = 100 * ours["attainment"] if ours else 0.0
            misses.append(f"{row['scenario']}{tag} ({att:.1f}%{fragile(row)})")
        elif r is None or r < 1:
            wins.append(f"{row['scenario']}{tag} ({_ratio(r)}× {row['best_baseline'] or 'no baseline reaches'}"
                        f"{fragile(row)})")
        else:
            losses.append(f"{row['scenario']}{tag} ({r:.2f}× {row['best_baseline']}{fragile(row)})")
    broken = [row["scenario"] for row in table if row["oracle_broken"]]
    to_oracle = [(row["scenario"], row["ours_over_oracle"]) for row in table if row["ours_over_oracle"] is not None]
    n = len(table)
    parts = [f"From `{command}` (the shipped default policy, unchanged in every scenario, against each "
             "baseline tuned by search; full table, protocol and plots in "
             "[`docs/benchmarks.md`](docs/benchmarks.md)). To keep 99% of requests within a 2 s TTFT, ours is:",
             "",
             f"- cheaper than the cheapest tuned baseline in {len(wins)} of {n} scenarios: "
             + (", ".join(wins) or "none") + ";",
             f"- costlier in {len(losses)}: " + (", ".join(losses) or "none") + ";",
             f"- short of 99% in {len(misses)}: " + (", ".join(misses) or "none") + "."]
    if to_oracle:
        lo, hi = min(r for _, r in to_oracle), max(r for _, r in to_oracle)
        parts += ["", f"Against the oracle (the cheapest plan with the trace and every cold start known in advance) "
                  f"ours costs {lo:.2f}–{hi:.2f}× where it reaches 99% ("
                  + ", ".join(f"{name} {r:.2f}×" for name, r in to_oracle) + ")."]
    if broken:
        parts += ["", f"The oracle is not a lower bound on {', '.join(broken)} (a policy reached 99% more "
                  "cheaply), so ratios to it there mean little."]
    return "\n".join(parts) + "\n"
