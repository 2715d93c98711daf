"""Seeded fuzzing of the sources at test size (benchmarks/fuzz_sources.py runs 10,000 cases each): hostile
scrape pages and Prometheus bodies never raise past the sources, never put an implausible value in the
signals, and no case takes over a second."""

from __future__ import annotations

from .fuzzcases import fuzz_prometheus_bodies, fuzz_scrape_pages


def test_fuzzed_scrape_pages_are_read_or_refused_quickly() -> None:
    r = fuzz_scrape_pages(1500, seed=7)
    assert r.cases == 1500 and not r.uncaught and not r.implausible, (r.uncaught + r.implausible)[:5]
    assert not r.slow and r.max_seconds < 1.0
    assert 0 < r.rejected < r.cases  # the cases exercise both outcomes


def test_fuzzed_prometheus_bodies_fail_their_group_only() -> None:
    r = fuzz_prometheus_bodies(150, seed=7)
    assert r.cases == 150 and not r.uncaught and not r.implausible, (r.uncaught + r.implausible)[:5]
    assert not r.slow and r.max_seconds < 1.0
    assert 0 < r.rejected < r.cases
