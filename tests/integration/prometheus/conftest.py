"""Fixtures: a real Prometheus (Debian's package) scraping the emulator.

Prometheus runs on a free 127.0.0.1 port with a generated config (1 s scrapes, HTTP service discovery
from the emulator's /targets) and its own temporary TSDB, and is torn down after. If it is not
installed the tests fail with the command that installs it: they never skip silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from autoscaler.emulator import fixed_replicas
from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.server import EmulatorServer
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace
from tests.prometheus_server import PrometheusProcess, emulator_scrape_config

__all__ = ["MODEL", "REPLICAS", "PrometheusProcess", "scrape_config", "scraping_prometheus"]

pytestmark = pytest.mark.integration

def scrape_config(emulator: EmulatorServer) -> str:
    return emulator_scrape_config(emulator.base_url)


MODEL = "llama-emulated"
REPLICAS = 3
# Prefill 3,000 tokens/s per replica with ~850-token prompts: ~3.5 requests/s each, so 9 requests/s on 3
# replicas runs near saturation and requests queue for a few hundred ms to seconds.
SERVING = ServingProfile(prefill_tokens_per_second=3000.0)
ARRIVALS_PER_SECOND = 9.0


def near_saturation_trace(seconds: float = 900.0, seed: int = 7) -> Trace:
    rng = np.random.default_rng(seed)
    n = int(ARRIVALS_PER_SECOND * seconds)
    t = np.cumsum(rng.exponential(1.0 / ARRIVALS_PER_SECOND, n))
    return Trace("near-saturation", t, rng.integers(200, 1500, n), rng.integers(20, 300, n), 0.0)


@pytest.fixture(scope="package")
def emulator() -> Iterator[EmulatorServer]:
    server = build_emulator(near_saturation_trace(), fixed_replicas(REPLICAS), model=MODEL, namespace="serving",
                            serving=SERVING, cold_start=COLD_START_PROFILES["warm"])
    server.start()
    yield server
    server.stop()


@contextmanager
def scraping_prometheus(emulator: EmulatorServer, folder: Path,
                        tls: tuple[Path, Path, Path] | None = None) -> Iterator[PrometheusProcess]:
    """A Prometheus scraping the emulator, once it has every replica's queue gauge; stopped after."""
    prom = PrometheusProcess(scrape_config(emulator), folder, tls=tls)
    prom.start()
    try:
        prom.wait_for("vllm:num_requests_waiting", n=REPLICAS)
        yield prom
    finally:
        prom.stop()


@pytest.fixture(scope="package")
def prometheus(emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    with scraping_prometheus(emulator, tmp_path_factory.mktemp("prometheus")) as prom:
        yield prom
