"""Length mixes: pairs from a trace as they occur in it, distributions with the mean asked for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autoscaler.profile.mix import Lengths, trace_mix
from autoscaler.profile.prompts import synth_prompt

SLICE = Path(__file__).resolve().parents[3] / "simulations/data/azure_code_slice.csv"


def test_trace_pairs_are_the_traces_own_and_capped() -> None:
    mix = trace_mix(str(SLICE), max_prompt_tokens=4000, max_output_tokens=100)
    pairs = set(zip(mix.prompt_tokens.tolist(), mix.output_tokens.tolist(), strict=True))
    rng = np.random.default_rng(0)
    for _ in range(200):
        p, o = mix.draw(rng)
        assert p <= 4000 and o <= 100
        if p < 4000 and o < 100:
            assert (p, o) in pairs


def test_lognormal_lengths_have_the_mean_asked_for() -> None:
    rng = np.random.default_rng(0)
    draws = [Lengths(500, 0.8, cap=10**6).draw(rng) for _ in range(20000)]
    assert np.mean(draws) == pytest.approx(500, rel=0.03)
    assert Lengths(7).draw(rng) == 7


def test_prompts_have_the_word_count_and_differ() -> None:
    rng = np.random.default_rng(0)
    a, b = synth_prompt(300, rng), synth_prompt(300, rng)
    assert len(a.split()) == 300 and a != b and a[:40] != b[:40]  # a prefix cache cannot share them
    assert len(synth_prompt(300, rng, tokens_per_word=1.5).split()) == 200
