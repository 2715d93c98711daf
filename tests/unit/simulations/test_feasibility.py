"""Idle-replica TTFT, feasibility, and scoring attainment over feasible requests (docs/slo.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simulations.bench_report import markdown, with_infeasible_share
from simulations.errors import SimulationInputError
from simulations.feasibility import feasible, idle_ttft_seconds, score_distribution, score_requests
from simulations.fleet import RequestFleet
from simulations.outcome import outcome_from_requests
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.runner import run
from simulations.scenario import SloSpec, build_workload, parse_scenario
from simulations.trace import Trace
from simulations.verdict import render

from .conftest import poisson_trace

PROMPTS = np.array([1, 150, 8191, 8192, 8193, 20_000, 40_000])


def test_idle_ttft_is_what_the_engine_gives_one_request_on_an_idle_replica() -> None:
    serving = ServingProfile(attention_seconds_per_token_pair=1e-11)  # make the attention term matter
    # one request every 60 s: each finds the replica idle; chunked past 8,192 tokens
    trace = Trace("spaced", np.arange(len(PROMPTS)) * 60.0, PROMPTS, np.full(len(PROMPTS), 3), 0.0)
    fleet = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=1)
    fleet.advance(len(PROMPTS) * 60.0 + 60)
    fleet.outcome(2.0)
    assert np.allclose(fleet.ttft, idle_ttft_seconds(serving, PROMPTS), rtol=1e-9, atol=1e-12)


def test_feasible_compares_idle_ttft_with_the_length_dependent_budget() -> None:
    serving = ServingProfile()  # 15,000 tokens/s: ~2 s of prefill at ~29,000 tokens
    flat = SloSpec(ttft_seconds=2.0)
    assert feasible(flat, serving, PROMPTS).tolist() == [True] * 6 + [False]
    sloped = SloSpec(ttft_seconds=2.0, ttft_seconds_per_kilo_prompt_tokens=0.1)  # covers 1/15,000 s per token
    assert feasible(sloped, serving, PROMPTS).all()


def test_scoring_leaves_infeasible_requests_out_and_reports_their_share() -> None:
    serving = ServingProfile()
    slo = SloSpec(ttft_seconds=2.0)
    ttft = np.array([0.1, 0.2, 3.0, 0.5, np.inf, 1.0, 4.0])  # the 40k prompt (last) cannot make 2 s
    base = outcome_from_requests(ttft, np.zeros(7), 2.0, 3600.0, 0)
    scored, missed = score_requests(base, ttft, PROMPTS, slo, serving)
    assert scored.attainment_all == pytest.approx(4 / 7) == pytest.approx(base.attainment)
    assert scored.infeasible_share == pytest.approx(1 / 7)
    assert scored.attainment == pytest.approx(4 / 6)
    assert missed.tolist() == [False, False, True, False, True, False, False]
    # a request a scale-down aborted is a miss even when its first token came in time
    aborted = np.array([True, False, False, False, False, False, False])
    cut, cut_missed = score_requests(base, ttft, PROMPTS, slo, serving, aborted)
    assert cut.attainment == pytest.approx(3 / 6) and cut_missed[0]
    # per request budgets: 2 s + 0.1 s per 1k tokens lets the 40k-token request take up to 6 s
    sloped, _ = score_requests(base, ttft, PROMPTS, SloSpec(ttft_seconds=2.0, ttft_seconds_per_kilo_prompt_tokens=0.1),
                               serving)
    # budgets 2.0, 2.0, 2.8, 2.8, 2.8, 4, 6 s: the 3 s request still misses, the 4 s one (40k tokens) meets 6 s
    assert sloped.infeasible_share == 0 and sloped.attainment == pytest.approx(5 / 7)
    dist = score_distribution(base, PROMPTS.astype(float), slo, serving)
    assert dist.infeasible_share == pytest.approx(1 / 7)
    assert dist.attainment == pytest.approx(min(1.0, base.attainment / (6 / 7)))


def test_a_slope_needs_request_level_runs_and_prompt_scale_a_request_trace() -> None:
    with pytest.raises(SimulationInputError, match="fidelity: request"):
        parse_scenario({"name": "x", "trace": {"format": "diurnal"}, "fidelity": "fluid",
                        "slo": {"ttft_seconds": 2, "ttft_seconds_per_kilo_prompt_tokens": 0.2}})
    with pytest.raises(SimulationInputError, match="prompt_scale"):
        parse_scenario({"name": "x", "trace": {"format": "flash-crowd", "prompt_scale": 4}})
    with pytest.raises(SimulationInputError):
        parse_scenario({"name": "x", "trace": {"format": "flash-crowd"},
                        "slo": {"ttft_seconds": 2, "ttft_seconds_per_kilo_prompt_tokens": 61}})


def test_prompt_scale_multiplies_every_prompt(tmp_path) -> None:
    trace = poisson_trace(2.0, 30.0, prompt=3000)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(f'{{"timestamp": {int(t * 1000)}, "input_length": {int(p)}, "output_length": {int(o)}}}\n'
                            for t, p, o in zip(trace.arrival_s, trace.prompt_tokens, trace.output_tokens,
                                               strict=True)))
    base: dict[str, Any] = {"name": "x", "trace": {"format": "jsonl", "path": str(path)}}
    plain = build_workload(parse_scenario(base))
    scaled = build_workload(parse_scenario({**base, "trace": {**base["trace"], "prompt_scale": 10}}))
    assert isinstance(plain, Trace) and isinstance(scaled, Trace)
    assert np.array_equal(scaled.prompt_tokens, plain.prompt_tokens * 10)
    assert np.array_equal(scaled.arrival_s, plain.arrival_s)


def test_a_run_with_long_prompts_reports_the_share_in_the_verdict_and_the_bench_table() -> None:
    from simulations.autoscalers.static import Static

    sc = parse_scenario({"name": "long", "trace": {"format": "flash-crowd"}, "initial_replicas": 3,
                         "cold_start": "warm"})
    rng = np.random.default_rng(0)
    n = 600
    trace = Trace("long", np.sort(rng.uniform(0, 300, n)), rng.choice([2_000, 60_000], n, p=[0.9, 0.1]),
                  np.full(n, 50), 0.0)
    res = run(sc, trace, Static(3), "n=3")
    o = res.outcome
    long_share = float(np.mean(trace.prompt_tokens == 60_000))
    assert o.infeasible_share == pytest.approx(long_share)
    assert o.attainment_all is not None and o.attainment >= o.attainment_all
    assert o.attainment == pytest.approx(o.attainment_all / (1 - long_share))
    text = render(sc, [res])
    assert f"infeasible: {100 * long_share:.2f}% of requests" in text
    record = {"scenario": "long", "points": [res.to_dict()], "kind": "default", "family": "ours",
              "priors_scale": 1, "runs": 1, "fleet_mode": "request"}
    row = {"scenario": "long", "families": {"ours": None}, "oracle_broken": False,
           "ours_over_best_baseline": None, "ours_over_oracle": None, "priors": {}}
    (scored,) = with_infeasible_share([row], [record])
    assert scored["infeasible_share"] == pytest.approx(long_share, abs=1e-6)  # to_dict rounds to 6 digits
    md = markdown([scored], [record], "bench", True, 1.0)
    assert f"| {100 * long_share:.2f}% |" in md
