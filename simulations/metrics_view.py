"""What a controller sees of the simulated fleet: Prometheus with its real lags.

- The fleet is scraped every `scrape_interval_seconds` (15 s); between scrapes nothing new is known.
- Counters become rates as `rate(x[window])` does: (last − first) / (t_last − t_first) over the scrapes in
  the window (default 1 m), without Prometheus' extrapolation to the window edges.
- Latency quantiles are `histogram_quantile(q, rate(x_bucket[window]))`; the fleet observes queue time
  when a request finishes (vLLM does), so they lag; with no observation in the window they are missing.
- Gauges (running, waiting, KV use, and the gateway's outstanding requests as `front_door`) are as of the
  last scrape; every value's age is `now − scrape time`.
- `lag_seconds` models a further pipeline delay (e.g. prometheus-adapter for the HPA): the view then
  answers from the newest scrape at least that old.
"""

from __future__ import annotations

from bisect import bisect_right

from autoscaler.core import Measured, Signals
from autoscaler.core.signals import LatencyHistogram
from simulations.histograms import REQUEST_LATENCY_BUCKETS, TTFT_BUCKETS, quantile_from_counts
from simulations.sample import FleetSample


class MetricsView:
    def __init__(self, scrape_interval_seconds: float = 15.0, rate_window_seconds: float = 60.0,
                 keep_seconds: float = 900.0):
        self.scrape_interval_seconds = scrape_interval_seconds
        self.rate_window_seconds = rate_window_seconds
        self.keep_seconds = keep_seconds
        self._samples: list[FleetSample] = []
        self._times: list[float] = []

    def record(self, sample: FleetSample) -> None:
        self._samples.append(sample)
        self._times.append(sample.time)
        if len(self._times) > 4 and self._times[0] < sample.time - self.keep_seconds:
            cut = bisect_right(self._times, sample.time - self.keep_seconds)
            del self._samples[:cut], self._times[:cut]

    def latest(self, now: float, lag_seconds: float = 0.0) -> FleetSample | None:
        i = bisect_right(self._times, now - lag_seconds)
        return self._samples[i - 1] if i else None

    def _window(self, now: float, lag_seconds: float) -> tuple[FleetSample, FleetSample] | None:
        hi = bisect_right(self._times, now - lag_seconds)
        if hi < 2:
            return None
        last = self._samples[hi - 1]
        lo = bisect_right(self._times, last.time - self.rate_window_seconds - 1e-9)
        lo = min(lo, hi - 2)
        return self._samples[lo], last

    def signals(self, now: float, lag_seconds: float = 0.0) -> Signals:
        """The load part of the core's Signals (replicas, cluster and observations come from the target)."""
        last = self.latest(now, lag_seconds)
        if last is None:
            return Signals()
        age = now - last.time
        w = self._window(now, lag_seconds)
        rate_fields: dict[str, Measured] = {}
        ttft_hist: LatencyHistogram | None = None
        queue_hist: LatencyHistogram | None = None
        if w is not None:
            first, last_w = w
            dt = last_w.time - first.time
            rate_fields = {
                "request_rate": Measured((last_w.request_success - first.request_success) / dt, age),
                "prompt_tokens_rate": Measured((last_w.prompt_tokens - first.prompt_tokens) / dt, age),
                "generation_tokens_rate": Measured((last_w.generation_tokens - first.generation_tokens) / dt, age),
            }
            qt = quantile_from_counts(0.9, REQUEST_LATENCY_BUCKETS,
                                      _delta(last_w.queue_time_counts, first.queue_time_counts))
            tt = quantile_from_counts(0.9, TTFT_BUCKETS, _delta(last_w.ttft_counts, first.ttft_counts))
            rate_fields["queue_time_p90_seconds"] = Measured(qt, age) if qt is not None else Measured()
            rate_fields["ttft_p90_seconds"] = Measured(tt, age) if tt is not None else Measured()
            ttft_hist = _histogram(TTFT_BUCKETS, _delta(last_w.ttft_counts, first.ttft_counts), age)
            queue_hist = _histogram(REQUEST_LATENCY_BUCKETS, _delta(last_w.queue_time_counts,
                                                                    first.queue_time_counts), age)
        missing = Measured()
        return Signals(
            request_rate=rate_fields.get("request_rate", missing),
            prompt_tokens_rate=rate_fields.get("prompt_tokens_rate", missing),
            generation_tokens_rate=rate_fields.get("generation_tokens_rate", missing),
            running=Measured(last.running, age),
            waiting=Measured(last.waiting, age),
            kv_cache_usage=Measured(last.kv_cache_usage, age) if last.reporting_replicas else missing,
            queue_time_p90_seconds=rate_fields.get("queue_time_p90_seconds", missing),
            ttft_p90_seconds=rate_fields.get("ttft_p90_seconds", missing),
            ttft_histogram=ttft_hist,
            queue_time_histogram=queue_hist,
            front_door=Measured(last.in_flight, age),
            rate_window_seconds=self.rate_window_seconds,
        )


def _delta(a: tuple[float, ...], b: tuple[float, ...]) -> list[float]:
    return [x - y for x, y in zip(a, b, strict=True)]


def _histogram(bounds: tuple[float, ...], per_bucket: list[float], age: float) -> LatencyHistogram:
    """Per-bucket increases over the window as Prometheus `le` buckets (the last one +Inf)."""
    cumulative, acc = [], 0.0
    for c in per_bucket:
        acc += c
        cumulative.append(acc)
    return LatencyHistogram((*bounds, float("inf")), tuple(cumulative), age)
