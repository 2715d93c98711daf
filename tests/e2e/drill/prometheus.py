"""A real Prometheus (Debian's package, `.ci/install-prometheus.sh`) scraping the emulator every second:
the same server process the integration tests use."""

from __future__ import annotations

from tests.prometheus_server import PrometheusProcess as Prometheus
from tests.prometheus_server import emulator_scrape_config

__all__ = ["Prometheus", "emulator_scrape_config"]
