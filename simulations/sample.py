"""What one scrape of a simulated fleet returns: fleet totals as Prometheus would hold them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FleetSample:
    time: float
    # cumulative counters over the whole run (gone replicas included, as sum(rate()) would see them)
    prompt_tokens: float
    generation_tokens: float
    request_success: float
    queue_time_counts: tuple[float, ...]  # per-bucket cumulative-over-time counts, REQUEST_LATENCY_BUCKETS
    ttft_counts: tuple[float, ...]  # TTFT_BUCKETS
    # gauges, summed over replicas that serve /metrics (ready and draining)
    running: float
    waiting: float
    kv_cache_usage: float  # mean over those replicas, 0..1
    reporting_replicas: int  # replicas with metrics (HPA divides per-pod metrics by this)
    preemptions: float = 0.0  # cumulative vllm:num_preemptions_total over the fleet
    # the gateway's gauge of outstanding requests (arrived, neither finished nor aborted; those waiting for a
    # replica to be ready included): the demand in front of the engines a scaleFromZero query reads
    in_flight: float = 0.0
