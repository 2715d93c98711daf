"""Loaders: one in-memory form; every bad input names the file, line, field and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulations.errors import SimulationInputError
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.scenario import bundled_path
from simulations.trace import BinnedWorkload, Trace
from simulations.trace_loaders import load_azure_csv, load_jsonl, load_servegen_windows, servegen_workload

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_azure_csv_reads_100ns_timestamps_relative_to_the_first(tmp_path: Path) -> None:
    p = _write(tmp_path, "a.csv", HEADER + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n")
    tr = load_azure_csv(p)
    assert tr.arrival_s[0] == 0.0
    assert tr.arrival_s[1] == pytest.approx(0.052, abs=1e-6)
    assert list(tr.prompt_tokens) == [4808, 3180] and list(tr.output_tokens) == [10, 8]


def test_bundled_demo_slice_loads() -> None:
    tr = load_azure_csv(bundled_path("azure_code_slice.csv"))
    assert len(tr) > 3000 and tr.duration_seconds < 1200


@pytest.mark.parametrize(("row", "field"), [
    ("2023-11-16 18:17:04.1,abc,3\n", "ContextTokens"),
    ("yesterday,10,3\n", "TIMESTAMP"),
    ("2023-11-16 18:17:04.1,10,-3\n", "GeneratedTokens"),
])
def test_azure_bad_row_names_file_line_and_field(tmp_path: Path, row: str, field: str) -> None:
    p = _write(tmp_path, "bad.csv", HEADER + "2023-11-16 18:17:03.9,4808,10\n" + row)
    with pytest.raises(SimulationInputError) as e:
        load_azure_csv(p)
    assert f"{p}:3" in str(e.value) and field in str(e.value) and "Fix:" in str(e.value)


@pytest.mark.parametrize(("rows", "line"), [
    ("2023-11-16 18:17:03.9,4808,10,99\n2023-11-16 18:17:04.0,1,1\n", 2),  # pandas would drop the 99 silently
    ("2023-11-16 18:17:03.9,4808,10\n2023-11-16 18:17:04.0,1,1,7\n", 3),
])
def test_a_row_with_more_fields_than_the_header_is_named_not_truncated(tmp_path: Path, rows: str, line: int) -> None:
    p = _write(tmp_path, "wide.csv", HEADER + rows)
    with pytest.raises(SimulationInputError, match=rf"wide.csv:{line}: 4 fields, expected 3\. Fix:"):
        load_azure_csv(p)


def test_a_nul_character_is_named_not_dropped(tmp_path: Path) -> None:
    """pandas' parser ends a field at a NUL and drops the rest unseen ('ts,0,0,\\x00' loaded as a clean row;
    found by the loader fuzz test)."""
    p = _write(tmp_path, "nul.csv", HEADER + "2023-11-16 18:17:03.9,4808,10\n2023-11-16 18:00:00.0,0,0,\x00\n")
    with pytest.raises(SimulationInputError, match=r"nul.csv:3: a NUL character: not a text CSV\. Fix:"):
        load_azure_csv(p)


def test_azure_unsorted_is_an_error_with_the_fix(tmp_path: Path) -> None:
    p = _write(tmp_path, "u.csv", HEADER + "2023-11-16 18:17:05.0,1,1\n2023-11-16 18:17:04.0,1,1\n")
    with pytest.raises(SimulationInputError, match=r"u.csv:3.*sort"):
        load_azure_csv(p)


@pytest.mark.parametrize("text", ["", HEADER, "a,b,c\n1,2,3\n"])
def test_azure_empty_or_wrong_header_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(SimulationInputError):
        load_azure_csv(_write(tmp_path, "e.csv", text))


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(SimulationInputError, match="not found"):
        load_azure_csv(tmp_path / "nope.csv")


def test_jsonl_lines_end_at_newlines_only(tmp_path: Path) -> None:
    # JSON allows U+2028 and U+0085 raw inside a string; str.splitlines would cut the line there
    lines = [json.dumps({"timestamp": 0, "input_length": 5, "output_length": 2, "note": "a\u2028b\x85c"},
                        ensure_ascii=False), '{"timestamp": 10, "input_length": 7, "output_length": 3}\r']
    tr = load_jsonl(_write(tmp_path, "t.jsonl", "\n".join(lines) + "\n"))
    assert list(tr.prompt_tokens) == [5, 7] and list(tr.output_tokens) == [2, 3]


def test_jsonl_reads_mooncake_format(tmp_path: Path) -> None:
    rows = [{"timestamp": 0, "input_length": 100, "output_length": 5, "hash_ids": [1]},
            {"timestamp": 1500, "input_length": 200, "output_length": 7}]
    tr = load_jsonl(_write(tmp_path, "m.jsonl", "\n".join(json.dumps(r) for r in rows)))
    assert list(tr.arrival_s) == [0.0, 1.5] and list(tr.prompt_tokens) == [100, 200]


@pytest.mark.parametrize(("line", "field"), [
    ('{"timestamp": 10, "input_length": 1}', "output_length"),
    ('{"timestamp": -1, "input_length": 1, "output_length": 1}', "timestamp"),
    ('{"timestamp": true, "input_length": 1, "output_length": 1}', "timestamp"),
    ('{"timestamp": 1' + "0" * 400 + ', "input_length": 1, "output_length": 1}', "timestamp"),  # no float holds it
    ("not json", ""),
])
def test_jsonl_bad_line_is_named(tmp_path: Path, line: str, field: str) -> None:
    p = _write(tmp_path, "m.jsonl", '{"timestamp": 0, "input_length": 1, "output_length": 1}\n' + line + "\n")
    with pytest.raises(SimulationInputError) as e:
        load_jsonl(p)
    assert f"{p}:2" in str(e.value) and field in str(e.value)


def _servegen_dir(tmp_path: Path, rows: list[str]) -> Path:
    d = tmp_path / "m"
    d.mkdir(parents=True)
    (d / "chunk-0-trace.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return d


def test_servegen_counts_follow_the_window_rates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERENCE_AUTOSCALER_CACHE", "")
    d = _servegen_dir(tmp_path, ["0,2.0,3.0,Gamma,0.11,4.5", "600,0,0,,0,0", "1200,1.0,0.5,Weibull,2.0,1.0"])
    tokens = Trace("tok", np.array([0.0, 1.0]), np.array([100, 300]), np.array([10, 30]), 0.0)
    wl = servegen_workload(d, tokens, seed=3)
    assert wl.counts[:600].sum() == pytest.approx(1200, abs=1)
    assert wl.counts[600:1200].sum() == 0  # a collection gap stays a gap
    assert wl.counts[1200:].sum() == pytest.approx(600, abs=1)
    # Gamma with CV 3 is bursty: per-second counts vary far more than Poisson would
    first = wl.counts[:600]
    assert first.std() > 2 * np.sqrt(first.mean())
    again = servegen_workload(d, tokens, seed=3)
    assert np.array_equal(wl.counts, again.counts)  # seeded


def test_servegen_bad_distribution_is_named(tmp_path: Path) -> None:
    d = _servegen_dir(tmp_path, ["0,2.0,3.0,Pareto,0.11,4.5"])
    with pytest.raises(SimulationInputError, match=r"chunk-0-trace.csv:1.*iat_dist"):
        load_servegen_windows(d)


def test_servegen_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SimulationInputError, match="not a directory"):
        load_servegen_windows(tmp_path / "none")


def _sparse_servegen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int = 5) -> BinnedWorkload:
    """A heavy-tailed token source (lengths 1 or 1000: sd ≈ mean) at a few requests a minute, as in a
    ServeGen collection gap's edges."""
    monkeypatch.setenv("INFERENCE_AUTOSCALER_CACHE", "")
    d = _servegen_dir(tmp_path, ["0,0.05,1.0,Gamma,1.0,1.0", "600,0.05,1.0,Gamma,1.0,1.0"])
    tokens = Trace("tok", np.arange(4.0), np.array([1, 1, 1, 1000]), np.array([2, 2, 2, 500]), 0.0)
    return servegen_workload(d, tokens, seed=seed)


def test_servegen_token_sums_of_a_few_requests_are_sums_of_real_lengths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The normal approximation n·mean + sqrt(n)·sd·z gave 1-request bins 0 tokens (or 1,700); a bin of a
    few requests now carries the lengths of that many real requests, prompt and output drawn together."""
    wl = _sparse_servegen(tmp_path, monkeypatch)
    busy = np.nonzero(wl.counts > 0)[0]
    assert len(busy) >= 40 and wl.counts.max() < 32
    n, p, o = wl.counts[busy], wl.prompt_tokens[busy], wl.output_tokens[busy]
    long_p = (p - n) / 999  # how many of the bin's requests had the long prompt
    assert np.allclose(long_p, np.round(long_p)) and np.all((long_p >= 0) & (long_p <= n))
    assert np.allclose(o, 2 * (n - long_p) + 500 * long_p)  # the same requests' outputs
    assert 0 < long_p.sum() < n.sum()  # both lengths occur


def test_an_idle_fluid_fleet_does_not_queue_sparse_servegen_requests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serving: ServingProfile) -> None:
    """A request without prompt tokens was never scheduled by the fluid fleet's prompt-token pointer until the
    next one arrived: servegen-mid day 10's collection gap showed 20 idle replicas queueing for up to 35 s."""
    from simulations.fluid import FluidFleet

    for seed in range(3):
        wl = _sparse_servegen(tmp_path / str(seed), monkeypatch, seed)
        f = FluidFleet(wl, serving, COLD_START_PROFILES["warm"], initial_replicas=4)
        out = f.outcome(2.0)
        assert out.queue_p99_seconds < 0.1 and out.attainment == 1.0


def test_a_binned_workload_whose_requests_lack_prompt_tokens_is_refused() -> None:
    with pytest.raises(SimulationInputError, match=r"prompt_tokens.*bin 1 holds 2 requests but 1 prompt.*Fix:"):
        BinnedWorkload("w", 1.0, np.array([1.0, 2.0]), np.array([5.0, 1.0]), np.array([3.0, 3.0]),
                       np.array([1.0, 5.0]), np.array([3.0]), 0.0)
