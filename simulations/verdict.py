"""The terminal summary of one simulation: a table that fits 80 columns, a one-line legend and a verdict
in plain words, all derived from the results (nothing here is typed per scenario).

The verdict says whether `ours` met the SLO, what it cost against each baseline and the oracle, and why
requests missed the SLO: each miss is attributed by what the policy's fleet looked like when the request
arrived, either replicas it had already asked for were still starting (the burst outran the cold start) or
it had not asked for enough (demand rose faster than it decided). Plain text, so a pipe gets the same
80 columns as a terminal.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulations.outcome import Outcome
from simulations.profiles import ColdStartProfile
from simulations.runner import RunResult
from simulations.scenario import Scenario

WIDTH = 80
POLICY_WIDTH = 22
# (header, width) after the policy column; each cell is right-aligned.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("attainment", 10), ("GPU-h", 6), ("TTFT p50", 8), ("p99", 6), ("queue p99", 9), ("scales", 6),
    ("aborts", 6),
)


def cold_start_seconds(profile: ColdStartProfile) -> float:
    """Median time from asking for a replica to its readiness (stage medians summed)."""
    place = profile.scheduling_seconds if profile.free_gpus is None else profile.node_provisioning_seconds
    pull = 0.0 if profile.image_preloaded else profile.image_pull_seconds
    return place + pull + profile.weight_load_seconds + profile.warmup_seconds


def _seconds(x: float) -> str:
    if not math.isfinite(x):
        return "never"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def _percent(x: float) -> str:
    """Truncated, never rounded up: 98.996% shows as 98.99%, not as a goal-meeting 99.0%."""
    if x >= 1:
        return "100%"
    digits = 2 if x >= 0.98 else 1
    return f"{math.floor(100 * x * 10**digits + 1e-6) / 10**digits:.{digits}f}%"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def table(results: Sequence[RunResult]) -> list[str]:
    """One row per run; a long policy label wraps inside its column instead of being cut."""
    head = f"{'policy':<{POLICY_WIDTH}}" + "".join(f" {h:>{w}}" for h, w in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in results:
        o = r.outcome
        gpu = f"{o.gpu_hours:.2f}" if o.gpu_hours < 1000 else f"{o.gpu_hours:,.0f}"
        cells = (_percent(o.attainment), gpu, _seconds(o.ttft_p50_seconds),
                 _seconds(o.ttft_p99_seconds), _seconds(o.queue_p99_seconds), str(o.scale_events),
                 aborted_cell(o))
        label = textwrap.wrap(r.label.replace(",", ", "), POLICY_WIDTH, break_on_hyphens=False) or [r.label]
        lines.append(f"{label[0]:<{POLICY_WIDTH}}" + "".join(f" {c:>{w}}" for c, (_, w) in zip(cells, COLUMNS,
                                                                                            strict=True)))
        lines.extend(f"  {more}" for more in label[1:])
    return lines


def budget_words(slo_seconds: float, per_kilo: float | None = None) -> str:
    """The TTFT budget in words: "2 s" or "2 s + 0.5 s per 1k prompt tokens"."""
    return f"{slo_seconds:g} s" + (f" + {per_kilo:g} s per 1k prompt tokens" if per_kilo else "")


def aborted_cell(o: Outcome) -> str:
    """Requests a scale-down aborted; "–" where the fleet model does not count them (fluid)."""
    return f"{o.aborted:,.0f}" if o.aborted_counted else "–"


def legend(slo_seconds: float, per_kilo: float | None = None) -> str:
    """One line: what the two headline columns mean and which way is better."""
    return (f"attainment: % with 1st token ≤ {budget_words(slo_seconds, per_kilo)}, ↑ better · GPU-h: GPU-hours "
            f"paid, ↓ better")


def infeasible_line(results: Sequence[RunResult]) -> str | None:
    """One sentence when some requests' TTFT SLO no fleet can meet (the share is the workload's, the same for
    every policy); None when every request's is feasible."""
    share = max((r.outcome.infeasible_share for r in results), default=0.0)
    if share <= 0:
        return None
    ours = next((r for r in results if r.policy == "ours"), None)
    over_all = ours.outcome.attainment_all if ours is not None else None
    tail = f"; over all requests ours reached {_percent(over_all)}" if over_all is not None else ""
    return (f"infeasible: {100 * share:.2f}% of requests have prompts whose prefill alone, on an idle replica, "
            f"exceeds their TTFT budget: left out of attainment{tail}.")


ABORTED_LEGEND = "aborts: requests a scale-down killed before they finished (misses; – not counted)"


@dataclass(frozen=True)
class MissCauses:
    """Where a policy's SLO misses came from, as shares of its missed requests (or minutes)."""

    missed: float  # requests; seconds of arrivals for a fluid run; minutes if a run keeps no miss times
    unit: str  # "requests", "seconds" or "minutes"
    while_starting: float  # share that arrived while replicas the policy had asked for were starting
    not_asked: float  # share that arrived while the policy had asked for no more than were ready


def miss_causes(result: RunResult, slo_seconds: float, unit: str = "requests") -> MissCauses:
    """Attribute each miss to the fleet's state when it arrived (desired > ready: replicas were starting).
    `unit` is what `missed_arrivals` holds: one time per missed request (request-level runs) or per second
    of arrivals with a miss (fluid runs)."""
    if result.missed_arrivals is not None:
        times = np.asarray(result.missed_arrivals, dtype=np.float64)
    else:
        late = np.nan_to_num(result.ttft_p90, nan=0.0) > slo_seconds
        times, unit = np.asarray(result.ttft_t, dtype=np.float64)[late] + 30.0, "minutes"
    if len(times) == 0 or len(result.series_t) == 0:
        return MissCauses(float(len(times)), unit, 0.0, 0.0)
    i = np.clip(np.searchsorted(result.series_t, times, side="right") - 1, 0, len(result.series_t) - 1)
    starting = result.series_desired[i] > result.series_ready[i]
    share = float(np.mean(starting))
    return MissCauses(float(len(times)), unit, share, 1.0 - share)


def _cost_phrase(ours: RunResult, other: RunResult) -> str:
    a, b = ours.outcome, other.outcome
    if b.gpu_hours <= 0:
        cost = f"{a.gpu_hours:.2f} GPU-h against none"
    else:
        ratio = a.gpu_hours / b.gpu_hours
        if abs(ratio - 1) < 0.005:
            cost = "the same GPU-hours"
        else:
            cost = f"{abs(ratio - 1) * 100:.0f}% {'fewer' if ratio < 1 else 'more'} GPU-hours"
    points = 100 * (a.attainment - b.attainment)
    if abs(points) < 0.05:
        att = "the same attainment"
    else:
        att = f"{abs(points):.1f} points {'more' if points > 0 else 'less'} attainment"
    return f"{other.label}: {cost} and {att} ({_percent(b.attainment)})"


def _why(causes: MissCauses, cold_start: float) -> str:
    """Why ours missed, from where its misses fell (see `miss_causes`)."""
    if causes.missed == 0:
        return "It missed no request."
    parts = []
    if causes.while_starting >= 0.005:
        parts.append(f"{100 * causes.while_starting:.0f}% arrived while replicas it had asked for were still "
                     f"starting (cold start ~{_duration(cold_start)}): the load grew faster than new replicas "
                     "could start")
    if causes.not_asked >= 0.005:
        parts.append(f"{100 * causes.not_asked:.0f}% arrived while it had asked for no more replicas than were "
                     "ready: it had not (yet) seen or foreseen the extra load")
    what = "missed requests" if causes.unit == "requests" else f"{causes.unit} of arrivals with misses"
    return f"Why: of its {causes.missed:,.0f} {what}, " + "; ".join(parts) + "."


def verdict(scenario: Scenario, results: Sequence[RunResult]) -> str:
    """One paragraph: did ours meet the SLO, at what cost against each baseline and the oracle, and why."""
    slo, target = scenario.slo.ttft_seconds, scenario.slo.target_attainment
    budget = budget_words(slo, scenario.slo.ttft_seconds_per_kilo_prompt_tokens)
    ours = next((r for r in results if r.policy == "ours"), None)
    others = [r for r in results if r is not ours and r.policy != "oracle"]
    oracle = next((r for r in results if r.policy == "oracle"), None)
    cold = cold_start_seconds(scenario.cold_start_profile)
    if ours is None:
        reached = [r.label for r in others if r.outcome.attainment >= target]
        return f"No run of ours. Baselines meeting the {100 * target:g}% goal: {', '.join(reached) or 'none'}."
    o = ours.outcome
    met = o.attainment >= target
    of = "of the requests an idle replica can serve in time" if o.infeasible_share > 0 else "of requests"
    words = [f"Ours {'met' if met else 'missed'} the SLO: {_percent(o.attainment)} {of} got their first "
             f"token within {budget} (goal {100 * target:g}%), for {o.gpu_hours:.2f} GPU-h."]
    if others:
        words.append("Against " + "; ".join(_cost_phrase(ours, r) for r in others) + ".")
        beaten = [r.label for r in others if r.outcome.attainment >= target and r.outcome.gpu_hours < o.gpu_hours]
        if met and not beaten:
            words.append("No baseline at these settings met the goal for less (`inference-autoscaler bench` "
                         "searches each family, a right-sized static fleet included, for its cheapest setting "
                         "that does: docs/benchmarks.md).")
        elif beaten:
            words.append(f"{', '.join(beaten)} met the goal for less than ours.")
    starts = o.cache_hit_starts + o.cold_starts
    if starts:
        warm = (f" ({o.warm_starts} on a warm slot; the slots cost {o.warm_gpu_hours:.2f} GPU-h)"
                if o.warm_gpu_hours else "")
        words.append(f"Of its {starts} replica starts, {o.cache_hit_starts} hit a cache{warm} and "
                     f"{o.cold_starts} waited for a node or an image pull.")
    if oracle is not None and oracle.outcome.gpu_hours > 0:
        words.append(f"The oracle, which knows every arrival and cold start in advance, reached "
                     f"{_percent(oracle.outcome.attainment)} with {oracle.outcome.gpu_hours:.2f} GPU-h; ours used "
                     f"{o.gpu_hours / oracle.outcome.gpu_hours:.2f}× that.")
    unit = "requests" if scenario.fidelity == "request" else "seconds"
    causes = miss_causes(ours, slo, unit)
    if causes.missed == 0 and oracle is not None and o.gpu_hours > oracle.outcome.gpu_hours:
        words.append(f"Why: it missed no request, paying {100 * (o.gpu_hours / oracle.outcome.gpu_hours - 1):.0f}% "
                     "more than the oracle for replicas started ahead of demand, the margin that covered "
                     "forecast errors and cold starts.")
    else:
        words.append(_why(causes, cold))
    words.extend(_baseline_misses(others, slo, target, cold, unit))
    return " ".join(words)


def _baseline_misses(others: Sequence[RunResult], slo: float, target: float, cold_start: float,
                     unit: str) -> list[str]:
    """One sentence per dominant cause over the baselines that missed the goal."""
    late: list[str] = []
    starting: list[str] = []
    for r in others:
        if r.outcome.attainment >= target:
            continue
        c = miss_causes(r, slo, unit)
        if c.missed == 0:
            continue
        if c.not_asked >= c.while_starting:
            late.append(f"{r.label} ({100 * c.not_asked:.0f}%)")
        else:
            starting.append(f"{r.label} ({100 * c.while_starting:.0f}%)")
    out = []
    if late:
        they = "it" if len(late) == 1 else "they"
        out.append(f"Most misses of {_and(late)} came while {they} had asked for no more replicas than were "
                   f"ready: {they} added replicas only after the load had arrived.")
    if starting:
        their = "its" if len(starting) == 1 else "their"
        out.append(f"Most misses of {_and(starting)} came while {their} new replicas were still starting "
                   f"(~{_duration(cold_start)}).")
    return out


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def render(scenario: Scenario, results: Sequence[RunResult], width: int = WIDTH) -> str:
    """Title, table, legend and verdict, every line at most `width` columns."""
    profile = scenario.cold_start_profile
    title = (f"{scenario.name}: {profile.name} cold starts (~{_duration(cold_start_seconds(profile))}), "
             f"SLO: first token within "
             f"{budget_words(scenario.slo.ttft_seconds, scenario.slo.ttft_seconds_per_kilo_prompt_tokens)} for "
             f"{100 * scenario.slo.target_attainment:g}% of requests")
    out = [*textwrap.wrap(title, width), "", *table(results), ""]
    if (line := infeasible_line(results)) is not None:
        out += [*textwrap.wrap(line, width), ""]
    out += textwrap.wrap(legend(scenario.slo.ttft_seconds, scenario.slo.ttft_seconds_per_kilo_prompt_tokens), width)
    out += textwrap.wrap(ABORTED_LEGEND, width)
    out += ["", *textwrap.wrap(verdict(scenario, results), width, break_on_hyphens=False)]
    return "\n".join(out)
