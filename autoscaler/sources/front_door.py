"""The demand in front of the engines: each scaleFromZero policy's own PromQL (`spec.scaleFromZero.query`).

At 0 replicas no engine series exists, so the one demand signal is what the gateway or activator in front
of the model counts (its pending or in-flight requests). The query goes to the policy's Prometheus (its own
URL when the allow-list admits it, else `--prometheus-url`) with the engine queries' timeout, size limit
and credentials, one instant query per such policy per tick, in parallel. Its samples are summed.

An empty answer, a failed query, or a NaN or negative sample gives the last good value with its growing
age (MISSING if there never was one), never a zero: an unanswered gateway must not read as "no demand"
and let an idle model go to 0. A policy that no Prometheus can serve gets a one-line error in its status.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from autoscaler.core.signals import MISSING, Measured
from autoscaler.policy import ModelScalingPolicy, ScaleFromZeroSpec
from autoscaler.sources.lastknown import LastKnown
from autoscaler.sources.prom_api import Sample, SourceError
from autoscaler.sources.prometheus import PrometheusMetricsSource

SIGNAL = "front_door"
# The way out of an empty answer, said at run time (`_total`) and by `validate` (`empty_answer_note`).
FALLBACK_ADVICE = "append `or vector(0)` if no series means no request"
# A query with such a fallback (`... or vector(0)`, `... or on() vector(0)`).
_FALLBACK = re.compile(r"\bor\b.*\bvector\s*\(", re.DOTALL)


def empty_answer_note(z: ScaleFromZeroSpec | None) -> str | None:
    """What `validate` says of a gateway query without a fallback for no series: an empty answer is unknown
    (`_total`), never "no requests", so while it answers empty the model neither proves idleness (it never
    goes back to 0) nor wakes at 0 (onMissingMetrics decides). None when the query has one, or there is no
    query."""
    if z is None or _FALLBACK.search(z.query):
        return None
    return ("scaleFromZero.query has no fallback for no series: while it answers none (a counter never "
            "incremented, a gateway without this model yet) the demand in front of the model is unknown, so "
            f"the model never goes back to 0 and at 0 does what onMissingMetrics says; {FALLBACK_ADVICE} "
            "(docs/scale-from-zero.md)")


class FrontDoorSource:
    """`collect(policies, now)` → the front-door demand of every policy with scaleFromZero."""

    def __init__(self, prometheus: PrometheusMetricsSource, has_default_url: bool) -> None:
        self.prometheus = prometheus
        self.has_default_url = has_default_url
        self._last = LastKnown()
        self.policy_errors: dict[str, str] = {}

    def _url(self, p: ModelScalingPolicy) -> str | None:
        return self.prometheus.url_for(p) if p.spec.metrics.prometheus.url or self.has_default_url else None

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Measured]:
        asked = [p for p in policies if p.spec.scale_from_zero is not None]
        errors: dict[str, str] = {}
        jobs: list[tuple[ModelScalingPolicy, str, str]] = []
        for p in asked:
            refused = self.prometheus.refusal(p)
            url = self._url(p)
            if refused is None and url is None:
                refused = "no_prometheus", ("spec.scaleFromZero.query needs a Prometheus: set the controller's "
                                     "--prometheus-url (chart value prometheusUrl) or spec.metrics.prometheus.url")
            if refused is not None:
                if url is None:  # a refused URL or selector is counted by the engine queries already
                    self.prometheus.telemetry.error("prometheus", refused[0])
                errors[p.key] = refused[1]
                continue
            assert url is not None and p.spec.scale_from_zero is not None
            jobs.append((p, url, p.spec.scale_from_zero.query))
        self.policy_errors = errors
        answers = self.prometheus.ask_all([(url, query) for _, url, query in jobs], now)
        out = {p.key: MISSING for p in asked}
        for (p, url, query), answer in zip(jobs, answers, strict=True):
            m = self._accept(p, answer, (url, query), now)
            out[p.key] = m if m is not None else self._last.get(p.key, SIGNAL, now, (url, query))
        self._last.keep_only(p.key for p, _, _ in jobs)
        return out

    def _accept(self, p: ModelScalingPolicy, answer: list[Sample] | SourceError, identity: tuple[str, str],
                now: float) -> Measured | None:
        """The summed answer of `p`'s query (remembered as the last good value, for what it measured:
        `identity`, the URL and query, so an edited one does not inherit the old number), or None when it
        failed (counted by `ask_all`) or is no count of requests (counted here)."""
        tel, episode = self.prometheus.telemetry, f"prometheus policy {p.key} scaleFromZero.query"
        if isinstance(answer, SourceError):
            tel.episode(episode, str(answer))
            return None
        try:
            value, t = _total(answer)
        except SourceError as e:
            tel.error("prometheus", e.kind)
            tel.episode(episode, str(e))
            return None
        tel.episode(episode, None)
        self._last.put(p.key, SIGNAL, value, t, identity)
        return Measured(value, max(0.0, now - t))


def _total(answer: list[Sample]) -> tuple[float, float]:
    """The sum of the samples and the oldest sample time. Raises SourceError for an empty answer (no series:
    unknown, not zero) and for a NaN, infinite or negative sample."""
    if not answer:
        raise SourceError("absent", f"scaleFromZero.query answered no series ({FALLBACK_ADVICE})")
    for s in answer:
        if not math.isfinite(s.value) or not math.isfinite(s.timestamp):
            raise SourceError("non_finite", "scaleFromZero.query answered a NaN or infinite sample")
        if s.value < 0:
            raise SourceError("negative", "scaleFromZero.query answered a negative number of requests")
    return sum(s.value for s in answer), min(s.timestamp for s in answer)
