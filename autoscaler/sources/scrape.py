"""Signals from scraping each ready pod's /metrics directly (no Prometheus in between).

Per tick: GET every pod of every policy concurrently (`concurrency` workers bound in-flight requests), with
connect/read timeouts, a body-size cap and a total per-pod deadline so a slow-loris pod that trickles
bytes cannot hold the tick. Rates, latency histograms and their quantiles come from each pod's own
recent scrapes (a counter or bucket that drops was reset: its new value is the increase); a histogram is
the bucket increases over the rate window summed over pods. A pod whose scrape fails keeps
contributing its last good numbers with their age, so one sick pod makes the signal older, not
smaller; a pod that has never answered contributes nothing.

Pod addresses come from `targets`: a callable `policy -> addresses` (the controller derives them from
the scale target's selector) or a mapping `policy.key -> addresses`. An address is a full URL, or
`host[:port]` completed with the policy's `spec.metrics.scrape` scheme, port and path.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Final

import httpx
from prometheus_client import CollectorRegistry

from autoscaler.core.signals import MISSING, LatencyHistogram, Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import load_signals, with_histograms
from autoscaler.sources.engines import QUANTILE, SIGNAL_KIND, EngineMetrics, SignalName, engine_metrics
from autoscaler.sources.exposition import (
    ExpositionError,
    ExpositionTimeout,
    PodMetrics,
    SeriesKey,
    read_pod_metrics,
)
from autoscaler.sources.histogram import latency_histogram, quantile_of
from autoscaler.sources.plausible import plausible
from autoscaler.sources.prom_api import SourceError
from autoscaler.sources.telemetry import SourceTelemetry, telemetry_for

PodTargets = Callable[[ModelScalingPolicy], Sequence[str]] | Mapping[str, Sequence[str]]
ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
# Uncompressed bodies only: the size cap counts the bytes parsed, so a small compressed body cannot
# inflate past it.
HEADERS = {"Accept": ACCEPT, "Accept-Encoding": "identity"}


@dataclass(slots=True)
class _PodState:
    last_ok: float | None = None
    metrics: PodMetrics | None = None
    # (time, counters-and-buckets by signal) of recent good scrapes, oldest first.
    history: deque[tuple[float, PodMetrics]] = field(default_factory=deque)


def pod_url(policy: ModelScalingPolicy, address: str) -> str:
    if "://" in address:
        return address
    s = policy.spec.metrics.scrape
    has_port = "]:" in address if address.startswith("[") else ":" in address
    host = address if has_port else f"{address}:{s.port}"
    return f"{s.scheme}://{host}{s.path}"


def _increase(points: Sequence[float]) -> float:
    """Counter increase over consecutive values; a drop is a reset, so the new value is the increase."""
    total = 0.0
    for prev, cur in pairwise(points):
        total += cur - prev if cur >= prev else cur
    return total


class ScrapeMetricsSource:
    """`MetricsSource` that scrapes pods. `window_seconds` is the rate/quantile window (like PromQL's
    `[1m]`); `deadline_seconds` bounds one pod's whole request; `max_bytes` caps its body."""

    name: Final = "scrape"

    def __init__(
        self,
        targets: PodTargets,
        *,
        concurrency: int = 16,
        connect_timeout_seconds: float = 1.0,
        read_timeout_seconds: float | None = None,
        deadline_seconds: float | None = None,
        max_bytes: int = 8 << 20,
        window_seconds: float = 60.0,
        registry: CollectorRegistry | None = None,
        telemetry: SourceTelemetry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._targets = targets
        self.concurrency = max(1, concurrency)
        self.connect_timeout_seconds = connect_timeout_seconds
        self.read_timeout_seconds = read_timeout_seconds
        self.deadline_seconds = deadline_seconds
        self.max_bytes = max_bytes
        self.window_seconds = window_seconds
        self.telemetry = telemetry or telemetry_for(registry)
        self._transport = transport
        self._pods: dict[tuple[str, str], _PodState] = {}
        self.failed_policies: frozenset[str] = frozenset()
        self.last_request_count = 0

    def targets_for(self, policy: ModelScalingPolicy) -> list[str]:
        t = self._targets
        addresses = t.get(policy.key, ()) if isinstance(t, Mapping) else t(policy)
        return [pod_url(policy, a) for a in addresses]

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.collect_async(policies, now))
        raise RuntimeError("ScrapeMetricsSource.collect() called inside an event loop; await collect_async()")

    async def collect_async(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        started = time.perf_counter()
        jobs: list[tuple[ModelScalingPolicy, str]] = [(p, u) for p in policies for u in self.targets_for(p)]
        timeout = httpx.Timeout(
            connect=self.connect_timeout_seconds,
            read=self.read_timeout_seconds,
            write=self.connect_timeout_seconds,
            pool=None,
        )
        # `concurrency` workers, each with its own one-connection client: bounded in-flight requests, and
        # no shared pool to scan (httpcore's pool bookkeeping grows with its size on every request).
        results: list[str | None] = [None] * len(jobs)
        pending = list(range(len(jobs) - 1, -1, -1))

        async def worker() -> None:
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            async with httpx.AsyncClient(timeout=timeout, limits=limits, transport=self._transport) as client:
                while pending:
                    i = pending.pop()
                    p, u = jobs[i]
                    results[i] = await self._scrape(client, p, u, now)

        await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(jobs)))))
        self.last_request_count = len(jobs)

        live = {(p.key, u) for p, u in jobs}
        for k in [k for k in self._pods if k not in live]:
            del self._pods[k]  # pods no longer ready: their old numbers must not count

        errors: dict[str, list[str]] = {}
        for (p, u), err in zip(jobs, results, strict=True):
            if err is not None:
                errors.setdefault(p.key, []).append(f"{u}: {err}")
        out = {}
        for p in policies:
            urls = [u for q, u in jobs if q.key == p.key]
            errs = errors.get(p.key, [])
            self.telemetry.episode(f"scrape {p.key}", f"{len(errs)}/{len(urls)} pods failed, e.g. {errs[0]}"
                                   if errs else None)
            out[p.key] = self._signals(p, urls, now)
        self.failed_policies = frozenset(k for k, e in errors.items() if e)
        self.telemetry.collect_seconds.labels(source=self.name).observe(time.perf_counter() - started)
        return out

    async def _fetch(self, client: httpx.AsyncClient, url: str) -> bytes:
        async with client.stream("GET", url, headers=HEADERS) as r:
            if r.status_code != 200:
                raise SourceError("http_status", f"HTTP {r.status_code}")
            encoding = r.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise SourceError("bad_payload", f"compressed body ({encoding[:40]}) though identity was asked")
            buf = bytearray()
            async for chunk in r.aiter_bytes():  # identity: checked above
                buf += chunk
                if len(buf) > self.max_bytes:
                    raise SourceError("too_large", f"body over {self.max_bytes} bytes")
            return bytes(buf)

    async def _scrape(self, client: httpx.AsyncClient, p: ModelScalingPolicy, url: str, now: float) -> str | None:
        """Scrape one pod into its state; returns an error description or None. Never raises: whatever
        one pod does fails that pod only."""
        try:
            return await self._scrape_checked(client, p, url, now)
        except Exception as e:  # a bug or an input nothing above expected: contained to this pod
            self.telemetry.error(self.name, "unexpected")
            return f"unexpected: {type(e).__name__}: {str(e)[:200]}"

    async def _scrape_checked(self, client: httpx.AsyncClient, p: ModelScalingPolicy, url: str,
                              now: float) -> str | None:
        scrape = p.spec.metrics.scrape
        deadline = self.deadline_seconds if self.deadline_seconds is not None else scrape.timeout_seconds
        state = self._pods.setdefault((p.key, url), _PodState())
        self.telemetry.requests.labels(source=self.name).inc()
        t0 = time.monotonic()
        try:
            body = await asyncio.wait_for(self._fetch(client, url), deadline)
        except SourceError as e:
            self.telemetry.error(self.name, e.kind)
            return str(e)
        except (TimeoutError, httpx.TimeoutException):
            self.telemetry.error(self.name, "timeout")
            return f"timeout after {time.monotonic() - t0:.1f}s"
        except httpx.HTTPError as e:
            self.telemetry.error(self.name, "connect")
            return f"connect: {type(e).__name__}"
        engine = engine_metrics(p.spec.model.engine)
        try:  # the deadline covers parsing too: from the request's start to the last parsed line
            m = read_pod_metrics(body.decode("utf-8", errors="replace"), engine, p.spec.model.name,
                                 deadline=t0 + deadline)
        except ExpositionTimeout as e:
            self.telemetry.error(self.name, "timeout")
            return str(e)
        except ExpositionError as e:
            self.telemetry.error(self.name, "parse_error")
            return str(e)
        self.telemetry.error(self.name, "non_finite", m.dropped_non_finite)
        self.telemetry.error(self.name, "negative", m.dropped_negative)
        self.telemetry.error(self.name, "implausible", m.dropped_implausible)
        self._remember(state, m, now)
        return None

    def _remember(self, state: _PodState, m: PodMetrics, now: float) -> None:
        """Record a good scrape at the tick's time `now`; keep the window plus one older point."""
        state.metrics, state.last_ok = m, now
        if state.history and state.history[-1][0] >= now:
            state.history.pop()  # two scrapes in one tick: keep the newer
        state.history.append((now, m))
        while len(state.history) > 2 and state.history[1][0] <= now - self.window_seconds:
            state.history.popleft()
        if len(state.history) > 1 and state.history[0][0] < now - 3 * self.window_seconds:
            state.history.popleft()  # a gap (the pod failed for long): rate only over recent scrapes

    def _signals(self, p: ModelScalingPolicy, urls: Sequence[str], now: float) -> Signals:
        engine = engine_metrics(p.spec.model.engine)
        pods = []
        for u in urls:
            st = self._pods.get((p.key, u))
            if st is not None and st.metrics is not None and st.last_ok is not None:
                pods.append(st)
        values: dict[SignalName, Measured] = {}
        histograms: dict[SignalName, LatencyHistogram | None] = {}
        for signal in SignalName:
            if not engine.refs(signal):
                continue
            if SIGNAL_KIND[signal] != "quantile":
                values[signal] = self._checked(signal, self._aggregate(engine, signal, pods, now))
                continue
            h = self._histogram(signal, pods, now)
            q = quantile_of(QUANTILE, h) if h is not None else None
            histograms[signal] = h
            found = Measured(q, h.age_seconds) if h is not None and q is not None else MISSING
            values[signal] = self._checked(signal, found)
        return replace(with_histograms(load_signals(values), histograms), rate_window_seconds=self.window_seconds)

    def pod_inflight(self, policy: ModelScalingPolicy, address: str, now: float) -> Measured:
        """Running + waiting requests of one pod as last scraped for `policy` (`address` as the targets
        give it), with its age; MISSING when the pod has not answered or either gauge is unknown."""
        st = self._pods.get((policy.key, pod_url(policy, address)))
        if st is None or st.metrics is None or st.last_ok is None:
            return MISSING
        total = 0.0
        for signal in (SignalName.RUNNING, SignalName.WAITING):
            g = st.metrics.gauges.get(signal)
            if g is None or signal in st.metrics.tainted:
                return MISSING
            total += g[0]
        return Measured(total, max(0.0, now - st.last_ok))

    def _checked(self, signal: SignalName, m: Measured) -> Measured:
        """`m`, or MISSING (counted) when its value is outside the signal's physical bounds."""
        if m.value is None or plausible(signal, m.value):
            return m
        self.telemetry.error(self.name, "implausible")
        return MISSING

    def _aggregate(self, engine: EngineMetrics, signal: SignalName, pods: Sequence[_PodState],
                   now: float) -> Measured:
        """A gauge (sum or mean over pods) or a counter's rate (summed over pods); quantiles come from
        `_histogram`."""
        kind = SIGNAL_KIND[signal]
        total, n, oldest = 0.0, 0, now
        if any(st.metrics is not None and signal in st.metrics.tainted for st in pods):
            return MISSING  # a pod's value is unknown: a sum without it would read as less load
        if kind in ("sum", "mean"):
            for st in pods:
                assert st.metrics is not None and st.last_ok is not None
                g = st.metrics.gauges.get(signal)
                if g is None:
                    continue
                total += g[0] if kind == "sum" else g[0] / g[1]
                n += 1
                oldest = min(oldest, st.last_ok)
            if n == 0:
                return MISSING
            return Measured(total if kind == "sum" else total / n, max(0.0, now - oldest))

        if kind == "rate":
            for st in pods:
                inc = self._window_increase(st, signal)
                if inc is None:
                    continue
                increase, dt, newest = inc
                total += increase / dt
                n += 1
                oldest = min(oldest, newest)
            return Measured(total, max(0.0, now - oldest)) if n else MISSING

        raise ValueError(f"{signal.value} is a quantile: see _histogram")

    def _histogram(self, signal: SignalName, pods: Sequence[_PodState], now: float) -> LatencyHistogram | None:
        """Bucket increases over each pod's recent scrapes (the rate window), summed over pods; aged by
        the oldest contributing pod. None when no pod has two scrapes of the histogram."""
        merged: dict[float, float] = {}
        n, oldest = 0, now
        if any(st.metrics is not None and signal in st.metrics.tainted for st in pods):
            return None
        for st in pods:
            inc_b = self._bucket_increase(st, signal)
            if inc_b is None:
                continue
            per_le, newest = inc_b
            for le, c in per_le.items():
                merged[le] = merged.get(le, 0.0) + c
            n += 1
            oldest = min(oldest, newest)
        return latency_histogram(merged.items(), max(0.0, now - oldest)) if n else None

    def _window_increase(self, st: _PodState, signal: SignalName) -> tuple[float, float, float] | None:
        hist = list(st.history)
        if len(hist) < 2:
            return None
        dt = hist[-1][0] - hist[0][0]
        if dt <= 0:
            return None
        series: dict[SeriesKey, list[float]] = {}
        for _, m in hist:
            for k, v in m.counters.get(signal, {}).items():
                series.setdefault(k, []).append(v)
        if not series and signal not in hist[-1][1].counters:
            return None
        # A series that appeared mid-window counts from its first value, as in Prometheus's rate().
        increase = sum(_increase(vs) for vs in series.values())
        return increase, dt, hist[-1][0]

    def _bucket_increase(self, st: _PodState, signal: SignalName) -> tuple[dict[float, float], float] | None:
        hist = list(st.history)
        if len(hist) < 2 or signal not in hist[-1][1].buckets:
            return None
        series: dict[SeriesKey, list[float]] = {}
        les: dict[SeriesKey, float] = {}
        for _, m in hist:
            for k, (le, c) in m.buckets.get(signal, {}).items():
                series.setdefault(k, []).append(c)
                les[k] = le
        per_le: dict[float, float] = {}
        for k, vs in series.items():
            per_le[les[k]] = per_le.get(les[k], 0.0) + _increase(vs)
        return per_le, hist[-1][0]
