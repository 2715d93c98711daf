"""Metric sources: turn engine metrics (through Prometheus or a direct scrape) into the core's Signals."""
