"""`inference-autoscaler profile` against the emulator's OpenAI API: the knee it finds is the simulated
replica's true capacity at the SLO (computed from the serving model by the simulator itself), and the
capacity block it writes is accepted by `validate` inside a policy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from autoscaler.cli import main
from simulations.fleet import RequestFleet
from simulations.profiles import COLD_START_PROFILES
from simulations.trace import Trace
from tests.unit.profile.emulator_proc import TEST_SERVING

ROOT = Path(__file__).resolve().parents[3]
PROMPT, OUTPUT, SLO_TTFT, QUANTILE = 400, 8, 2.0, 0.9
SPEED = 5.0


def attainment(rate: float, seed: int, n: int = 20000) -> float:
    """Share of requests with TTFT ≤ the SLO on one simulated replica under Poisson load, long-run."""
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1 / rate, n))
    tr = Trace("poisson", arr, np.full(n, PROMPT), np.full(n, OUTPUT), 0.0)
    fleet = RequestFleet(tr, TEST_SERVING, COLD_START_PROFILES["warm"], initial_replicas=1)
    fleet.advance(float(arr[-1]) + 1000.0)
    return float(fleet.outcome(SLO_TTFT).attainment)


def true_capacity() -> float:
    """Highest rate whose long-run attainment (mean of 2 seeds) is ≥ the quantile, by bisection."""
    lo, hi = 1.0, 10.0
    for _ in range(10):
        mid = 0.5 * (lo + hi)
        if np.mean([attainment(mid, s) for s in (0, 1)]) >= QUANTILE:
            lo = mid
        else:
            hi = mid
    return lo


@pytest.fixture
def emulator_url():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests/unit/profile/emulator_proc.py"), str(SPEED)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), url
        yield url
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.timeout(300)
def test_profile_finds_the_simulated_replicas_knee(emulator_url: str, tmp_path: Path) -> None:
    truth = true_capacity()
    out = tmp_path / "capacity.yaml"
    t0 = time.monotonic()
    r = CliRunner().invoke(main, [
        "profile", "--url", emulator_url, "--prompt-tokens", str(PROMPT), "--output-tokens", str(OUTPUT),
        "--ttft", str(SLO_TTFT), "--quantile", str(QUANTILE), "--start-rate", "2", "--growth", "1.5",
        "--refine-steps", "3", "--warmup", "20", "--stage-seconds", "30", "--time-scale", str(SPEED),
        "--timeout", "60", "--seed", "0", "--out", str(out)])
    wall = time.monotonic() - t0
    print(r.output)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    knee = float(text.split("# knee ", 1)[1].split(" req/s", 1)[0])
    print(f"knee {knee:.3f} req/s vs true {truth:.3f} req/s ({knee / truth - 1:+.1%}); profile took {wall:.0f} s")
    # Each stage sends what a fixed seed (--seed, stage index) draws; what still varies is wall-clock
    # jitter (×5 in simulated time on a loaded machine), which mostly delays first tokens. A chance miss can
    # only make a stage break (lower the knee), never make one above the knee hold; a stage of ~100 judged
    # requests near the knee may break by chance, and the knee then lands a rung or two of the bisection
    # (0.19 req/s each, ~5%) lower. Hence asymmetric: −25% (every bisection stage breaking by chance, knee
    # 3 req/s = −21%, still passes) to +15%. Measured: 3.75 req/s (−1.4%) in 5 of 5 runs (docs/profile.md).
    assert -0.25 <= knee / truth - 1 <= 0.15, (knee, truth, r.output)

    cap = yaml.safe_load(text)["capacity"]
    # one replica at the knee is exactly one replica busy in the policy's capacity model
    busy = knee * PROMPT / cap["promptTokensPerSecond"] + knee * OUTPUT / cap["generationTokensPerSecond"]
    assert busy == pytest.approx(1.0, rel=0.01)

    policy = yaml.safe_load((ROOT / "policies/chat-deployment.yaml").read_text())
    policy["spec"]["capacity"] = {**policy["spec"].get("capacity", {}), **cap}
    pfile = tmp_path / "policy.yaml"
    pfile.write_text(yaml.safe_dump(policy))
    v = CliRunner().invoke(main, ["validate", str(pfile)])
    assert v.exit_code == 0, v.output
