"""The `ModelScalingPolicy` resource: one per model, as a custom resource or a plain YAML file.

Field names are camelCase on the wire (Kubernetes convention) and snake_case in Python.
Unknown fields are errors everywhere: a typo must never be silently ignored.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

API_GROUP = "autoscaler.inference.dev"
VERSION = "v1alpha1"
API_VERSION = f"{API_GROUP}/{VERSION}"
KIND = "ModelScalingPolicy"
PLURAL = "modelscalingpolicies"
SHORT_NAME = "msp"

Engine = Literal["vllm", "sglang", "tgi", "trtllm"]
ENGINES: tuple[str, ...] = ("vllm", "sglang", "tgi", "trtllm")
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_ALL_DAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

# Physical bounds. Every number a policy holds is bounded, so that no value the CRD (or `validate`) accepts
# can overflow, exhaust memory or stall a decision: see docs/reliability.md.
MINUTE, HOUR, DAY, WEEK = 60.0, 3600.0, 86400.0, 604800.0
MAX_REPLICAS = 10_000  # replicas of one model; far above any real fleet, far below an overflow
MAX_PERCENT = 1000.0  # a step of 10x the current count per period
MAX_STAGE_SECONDS = 2 * HOUR  # one cold-start stage prior (lead time ≤ 5 stages × the spread's quantile)
MAX_FORECAST_HISTORY_STEPS = 100_000  # the forecaster's ring buffer (default: 14 days at 60 s = 20,160)
MIN_FORECAST_HISTORY_STEPS = 10
MAX_TIMEZONE_LENGTH = 64  # the longest IANA name is 32 characters
# A TTFT SLO slope: prefill runs at ≥ ~1,000 tokens/s on any GPU that serves an LLM, so more than a minute
# per 1,000 prompt tokens is a typo (docs/slo.md).
MAX_SECONDS_PER_KILO_TOKENS = 60.0
MAX_QUERY_LENGTH = 4096  # a policy's own PromQL (scaleFromZero.query): a sentence, not a program
MAX_ACTIVATION_THRESHOLD = 1e6  # requests (pending or per second) in front of one model

PositiveSeconds = Annotated[float, Field(gt=0, le=DAY)]
NonNegativeSeconds = Annotated[float, Field(ge=0, le=DAY)]
StageSeconds = Annotated[float, Field(ge=0, le=MAX_STAGE_SECONDS)]
Percent = Annotated[float, Field(gt=0, le=MAX_PERCENT)]
Replicas = Annotated[int, Field(ge=0, le=MAX_REPLICAS)]
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_TZ_PATTERN = r"^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@functools.lru_cache(maxsize=1)
def _time_zones() -> frozenset[str]:
    from zoneinfo import available_timezones

    return frozenset(available_timezones())


def is_time_zone(name: str) -> bool:
    """A name zoneinfo can load as a zone: not a directory ('America'), not a path, not 300 characters.
    Checked at validation time so that the controller never meets a zone it cannot load."""
    if not (0 < len(name) <= MAX_TIMEZONE_LENGTH) or not re.fullmatch(_TZ_PATTERN, name):
        return False
    if name not in _time_zones() and name != "UTC":
        return False
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(name)
    except Exception:  # ZoneInfoNotFoundError, IsADirectoryError, OSError, ValueError: not a zone
        return False
    return True


_M = TypeVar("_M", bound=BaseModel)


def revised(model: _M, **changes: Any) -> _M:
    """`model` with the fields in `changes` replaced, validated as a document is; a mapping given for a field
    that holds a model changes that model's fields it names (`capacity={"target_utilization": 0.7}`). Pydantic's
    `model_copy(update=...)` skips validation, so a copy built from a flag or a factor could carry a value the
    field's bounds refuse (a prior × 10⁶, `--scale inf`); this raises pydantic's `ValidationError` instead."""
    data = model.model_dump()
    for key, value in changes.items():
        nested = isinstance(value, dict) and isinstance(getattr(model, key, None), BaseModel)
        data[key] = {**data[key], **value} if nested else value
    return type(model).model_validate(data)


class _Spec(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, allow_inf_nan=False
    )


class TargetRef(_Spec):
    """What to scale. Deployment, LeaderWorkerSet and any resource with a `/scale` subresource are
    scaled through `/scale`; KServe InferenceService and LLMInferenceService get their own handling."""

    api_version: str = Field(min_length=1, max_length=253, description="e.g. apps/v1, serving.kserve.io/v1beta1")
    kind: str = Field(min_length=1, max_length=63, description="Deployment, InferenceService, LLMInferenceService, ...")
    name: str = Field(min_length=1, max_length=253)

    @field_validator("api_version")
    @classmethod
    def _api_version_shape(cls, v: str) -> str:
        if v.count("/") > 1 or v.endswith("/") or v.startswith("/"):
            raise ValueError("must look like 'group/version' or 'version' (e.g. apps/v1)")
        return v


class PrometheusSource(_Spec):
    url: str | None = Field(
        default=None, max_length=2048, description="Prometheus base URL; defaults to the controller's --prometheus-url"
    )


class ScrapeSource(_Spec):
    port: int = Field(default=8000, ge=1, le=65535)
    path: str = Field(default="/metrics", pattern=r"^/", max_length=1024)
    scheme: Literal["http", "https"] = "http"
    timeout_seconds: float = Field(default=2.0, gt=0, le=MINUTE)


class MetricsSpec(_Spec):
    """Where the engine's metrics come from and when they are too old to trust."""

    source: Literal["prometheus", "scrape"] = "prometheus"
    fallback_to_scrape: bool = Field(
        default=True, description="when Prometheus fails, scrape the pods directly until it is back"
    )
    prometheus: PrometheusSource = PrometheusSource()
    scrape: ScrapeSource = ScrapeSource()
    label_selector: dict[str, Annotated[str, Field(max_length=253)]] = Field(
        default_factory=dict, max_length=32, description="extra label matchers added to every query"
    )
    staleness_seconds: float = Field(
        default=60.0, gt=0, le=HOUR, description="a signal older than this is treated as missing"
    )


class ModelSpec(_Spec):
    name: str = Field(min_length=1, max_length=253, description="the engine's model_name label")
    engine: Engine = "vllm"
    gpus_per_replica: int = Field(default=1, ge=1, le=1024)


class SLOSpec(_Spec):
    ttft_seconds: Annotated[float, Field(gt=0, le=HOUR)] | None = 2.0
    queue_time_seconds: Annotated[float, Field(gt=0, le=HOUR)] | None = None
    quantile: float = Field(default=0.99, gt=0, lt=1, description="share of requests that must meet it")
    ttft_seconds_per_kilo_prompt_tokens: Annotated[float, Field(ge=0, le=MAX_SECONDS_PER_KILO_TOKENS)] | None = Field(
        default=None, description="seconds the TTFT SLO grows per 1,000 prompt tokens (docs/slo.md)")

    @model_validator(mode="after")
    def _one_objective(self) -> SLOSpec:
        if self.ttft_seconds is None and self.queue_time_seconds is None:
            raise ValueError("set ttftSeconds and/or queueTimeSeconds")
        if self.ttft_seconds_per_kilo_prompt_tokens is not None and self.ttft_seconds is None:
            raise ValueError("ttftSecondsPerKiloPromptTokens grows the TTFT SLO: set ttftSeconds too "
                             "(the budget of a request with no prompt tokens)")
        return self

    @property
    def queue_budget_seconds(self) -> float:
        """Queue time allowed per request: the explicit queue SLO, else half the TTFT SLO."""
        if self.queue_time_seconds is not None:
            return self.queue_time_seconds
        assert self.ttft_seconds is not None
        return 0.5 * self.ttft_seconds


class SLOFeedbackSpec(_Spec):
    """Learn how much load a replica can carry from the SLO itself. Latency histograms say what share of
    recent requests met the SLO. Misses while the whole fleet is ready mean demand comes in bursts the
    rate window averages away: plan each replica for less (factor > 1, up to `max`; the default 1 leaves
    misses to the capacity learner's knees, which measured cheaper at the same attainment: docs/benchmarks.md,
    decision change AH). Misses while replicas start count
    at a tenth of that pace, and only while the SLO's error budget over hours burns at twice its rate:
    rises that outrun a cold start then ask for headroom, unless the rise went past what the factor's
    whole range could have covered (a step no headroom meets). A comfortable margin (windows that used at most
    a tenth of the error budget) means the target utilization was cautious: plan for more (factor < 1,
    never past 95% of capacity), once that budget burns at under half its rate, and only while the fleet
    carries its plan (not while held above it after a peak)."""

    enabled: bool = True
    min: float = Field(default=0.8, gt=0, le=1, description="lowest factor (most load per replica)")
    max: float = Field(default=1.0, ge=1, le=10, description=(
        "highest factor (least load per replica); the default 1 plans no headroom over the target utilization "
        "for misses (the capacity learner answers them: docs/benchmarks.md, decision change AH)"))
    relax_seconds: PositiveSeconds = Field(
        default=1800.0, description="e-folding time of the factor's fall while the SLO holds with margin")
    min_requests: int = Field(
        default=20, ge=1, le=1_000_000, description="judge the SLO only on windows with this many"
    )

    @model_validator(mode="after")
    def _ordered(self) -> SLOFeedbackSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be ≤ max ({self.max})")
        return self


class CapacitySpec(_Spec):
    """Per-replica capacity prior. One replica serves `promptTokensPerSecond` of prefill OR
    `generationTokensPerSecond` of decode at saturation; a mix shares its time."""

    prompt_tokens_per_second: float = Field(default=15000.0, gt=0, le=1e8)
    generation_tokens_per_second: float = Field(default=2500.0, gt=0, le=1e8)
    max_concurrency: int | None = Field(
        default=None, ge=1, le=1_000_000, description="sequences one replica runs at once"
    )
    target_utilization: float = Field(default=0.65, gt=0, le=1)
    learn: bool = True
    learn_min_factor: float = Field(
        default=0.5, gt=0, le=1,
        description="learned capacity ≥ this × the prior, or × the throughput measured under a real queue when lower")
    learn_max_factor: float = Field(default=2.0, ge=1, le=100, description="learned capacity ≤ prior × this")
    slo_feedback: SLOFeedbackSpec = SLOFeedbackSpec()


class FloorWindow(_Spec):
    """A time-of-day floor: at least `minReplicas` between `start` and `end` on `days`."""

    days: list[Weekday] = Field(default_factory=lambda: [*_ALL_DAYS], min_length=1, max_length=7)
    start: str = Field(max_length=5, description="HH:MM, inclusive", json_schema_extra={"pattern": _HHMM.pattern})
    end: str = Field(
        max_length=5,
        description="HH:MM, exclusive; may be earlier than start to cross midnight",
        json_schema_extra={"pattern": _HHMM.pattern},
    )
    min_replicas: Replicas
    timezone: str = Field(default="UTC", min_length=1, max_length=MAX_TIMEZONE_LENGTH, pattern=_TZ_PATTERN)

    @field_validator("start", "end")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        if not _HHMM.match(v):
            raise ValueError("must be HH:MM in 24-hour time, e.g. 08:30")
        return v

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        if not is_time_zone(v):
            raise ValueError("must be an IANA time zone such as UTC or Europe/Berlin")
        return v


def _cel(*rules: tuple[str, str]) -> ConfigDict:
    """Cross-field rules for the CRD (CEL), mirroring the model validators so the API server agrees."""
    return ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [{"rule": r, "message": m} for r, m in rules]}
    )


class ReplicasSpec(_Spec):
    model_config = _cel(
        ("!has(self.min) || !has(self.max) || self.min <= self.max", "min must be ≤ max"),
        (
            "!has(self.floorSchedule) || !has(self.max) || self.floorSchedule.all(w, w.minReplicas <= self.max)",
            "floorSchedule[].minReplicas must be ≤ max",
        ),
    )
    min: int = Field(default=1, ge=0, le=MAX_REPLICAS)
    max: int = Field(default=10, ge=1, le=MAX_REPLICAS)
    floor_schedule: list[FloorWindow] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _ordered(self) -> ReplicasSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be ≤ max ({self.max})")
        for i, w in enumerate(self.floor_schedule):
            if w.min_replicas > self.max:
                raise ValueError(f"floorSchedule[{i}].minReplicas ({w.min_replicas}) exceeds max ({self.max})")
        return self


class ForecastSpec(_Spec):
    model_config = _cel(
        (
            "!has(self.historySeconds) || !has(self.stepSeconds) || "
            f"(self.historySeconds >= {MIN_FORECAST_HISTORY_STEPS}.0 * self.stepSeconds && "
            f"self.historySeconds <= {MAX_FORECAST_HISTORY_STEPS}.0 * self.stepSeconds)",
            f"historySeconds must hold {MIN_FORECAST_HISTORY_STEPS} to {MAX_FORECAST_HISTORY_STEPS} steps "
            "of stepSeconds",
        ),
    )
    enabled: bool = True
    method: Literal["auto", "holt", "seasonal", "last", "seasonal-naive"] = "auto"
    quantile: float = Field(default=0.9, ge=0.5, le=0.999)
    history_seconds: float = Field(default=14 * DAY, ge=60, le=5 * WEEK, description="at least 10 steps")
    step_seconds: float = Field(default=60.0, ge=1, le=HOUR, description="bucket width of the demand series")
    refit_every_seconds: float = Field(default=3600.0, ge=60, le=WEEK)

    @model_validator(mode="after")
    def _history_in_steps(self) -> ForecastSpec:
        steps = self.history_seconds / self.step_seconds
        if steps < MIN_FORECAST_HISTORY_STEPS:
            raise ValueError(
                f"historySeconds ({self.history_seconds:g}) must hold at least {MIN_FORECAST_HISTORY_STEPS} "
                f"steps of stepSeconds ({self.step_seconds:g})"
            )
        if steps > MAX_FORECAST_HISTORY_STEPS:
            raise ValueError(
                f"historySeconds / stepSeconds ({steps:.0f}) must be at most {MAX_FORECAST_HISTORY_STEPS}: "
                "raise stepSeconds or shorten historySeconds"
            )
        return self


class ColdStartSpec(_Spec):
    """Priors for each cold-start stage (median seconds), learned from what pods and nodes report."""

    scheduling_seconds: StageSeconds = Field(default=2.0, description="free GPU on a ready node")
    node_provisioning_seconds: StageSeconds = Field(default=100.0, description="a new GPU node")
    image_pull_seconds: StageSeconds = Field(default=300.0, description="image not cached on node")
    weight_load_seconds: StageSeconds = 20.0
    warmup_seconds: StageSeconds = 60.0
    spread: float = Field(default=0.3, ge=0, le=1, description="lognormal sigma of the prior")
    learn: bool = True
    quantile: float = Field(default=0.9, ge=0.5, le=0.999, description="lead-time quantile to plan with")
    unschedulable_limit_seconds: PositiveSeconds = Field(
        default=900.0, description="replicas unschedulable longer than this are reported, not piled on"
    )


_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class WarmCapacitySpec(_Spec):
    """Warm capacity: placeholder pods at a low PriorityClass that hold the replica's GPUs on nodes where
    the model's image (and optionally its weights) is cached. A real replica preempts one through the
    scheduler's priority preemption and skips node provisioning and image pull (and model download when
    weights are pre-staged). The decision sizes the pool within [minSlots, maxSlots]; every slot costs
    GPU-hours like a replica. See docs/warm-capacity.md."""

    model_config = _cel(("!has(self.minSlots) || !has(self.maxSlots) || self.minSlots <= self.maxSlots",
                         "minSlots must be ≤ maxSlots"))
    enabled: bool = False
    min_slots: int = Field(default=0, ge=0, le=MAX_REPLICAS, description="placeholders always kept")
    max_slots: int = Field(default=2, ge=0, le=MAX_REPLICAS, description="placeholders at most")
    priority_class_name: str = Field(
        default="inference-autoscaler-warm", min_length=1, max_length=253,
        json_schema_extra={"pattern": _DNS_SUBDOMAIN},
        description="a PriorityClass below the replicas' (the chart creates this one)",
    )
    image: str | None = Field(
        default=None, min_length=1, max_length=1024,
        description="image the placeholder runs with a no-op command; default: each GPU container's own",
    )
    weights_cache_path: str | None = Field(
        default=None, max_length=1024, json_schema_extra={"pattern": "^/"},
        description="node-local path the placeholder pre-stages weights into; unset: weights not pre-staged",
    )

    @field_validator("priority_class_name")
    @classmethod
    def _class_name(cls, v: str) -> str:
        if not re.fullmatch(_DNS_SUBDOMAIN, v):
            raise ValueError(f"{v!r} is not a PriorityClass name: use lowercase letters, digits, '-' and '.' "
                             "(e.g. inference-autoscaler-warm)")
        return v

    @field_validator("weights_cache_path")
    @classmethod
    def _absolute(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("/"):
            raise ValueError(f"{v!r} must be an absolute path on the node, e.g. /var/cache/inference-models")
        return v

    @model_validator(mode="after")
    def _ordered(self) -> WarmCapacitySpec:
        if self.min_slots > self.max_slots:
            raise ValueError(f"minSlots ({self.min_slots}) must be ≤ maxSlots ({self.max_slots})")
        return self

    @property
    def prestages_weights(self) -> bool:
        return self.weights_cache_path is not None


class PanicSpec(_Spec):
    """When the SLO is already breached, scale up without the usual rate limit and hold scale-down."""

    enabled: bool = True
    queue_time_ratio: float = Field(default=1.0, gt=0, le=100, description="panic when queue time > SLO × this")
    hold_seconds: PositiveSeconds = 120.0
    max_step_percent: Percent = 400.0


class ScaleUpSpec(_Spec):
    max_step_replicas: int = Field(default=8, ge=1, le=MAX_REPLICAS)
    max_step_percent: Percent = 100.0
    period_seconds: PositiveSeconds = 30.0
    backlog_drain_seconds: PositiveSeconds = Field(
        default=120.0, description="drain the projected queue within this long after capacity arrives"
    )
    panic: PanicSpec = PanicSpec()


class ScaleDownSpec(_Spec):
    stabilization_window_seconds: PositiveSeconds | None = Field(
        default=None,
        description="defaults to max(600 s, the high-quantile cold start): a removed replica should be "
        "unlikely to be needed again within one cold start",
    )
    max_step_replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    max_step_percent: float = Field(default=50.0, gt=0, le=100)
    period_seconds: PositiveSeconds = 60.0
    deletion_cost: bool = Field(
        default=True,
        description="before lowering replicas of a Deployment, set controller.kubernetes.io/pod-deletion-cost "
        "on its pods so the ReplicaSet removes those with the fewest in-flight requests (docs/scale-down.md)",
    )


class MissingMetricsSpec(_Spec):
    """What stale or absent demand signals lead to. None of them ever scales down."""

    action: Literal["hold", "floor", "fixed"] = "hold"
    replicas: int | None = Field(
        default=None, ge=0, le=MAX_REPLICAS, description="for action=fixed: at least this many"
    )

    @model_validator(mode="after")
    def _fixed_needs_replicas(self) -> MissingMetricsSpec:
        if self.action == "fixed" and self.replicas is None:
            raise ValueError("action 'fixed' needs replicas")
        return self


class ScaleFromZeroSpec(_Spec):
    """Demand seen in front of the engines, for a model that may rest at 0 replicas (`replicas.min: 0`).

    At 0 replicas no engine reports anything, so the policy reads `query` instead: PromQL for the requests
    waiting at (or arriving at) the gateway or activator in front of this model, an instant vector whose
    samples are summed. Above `threshold` it starts `replicas`; an empty or failed answer starts nothing
    and stops nothing (unknown is never idle). A serving model goes back to 0 only after `idleSeconds` in
    which every engine reported no request, running or waiting, and the gateway nothing above `threshold`
    (docs/scale-from-zero.md)."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_LENGTH,
                       description="PromQL: requests pending or arriving in front of this model (summed)")
    threshold: float = Field(default=0.0, ge=0, le=MAX_ACTIVATION_THRESHOLD,
                             description="the query's value above which the model is started")
    replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS, description="replicas started from zero")
    idle_seconds: float = Field(default=900.0, ge=MINUTE, le=DAY,
                                description="back to 0 only after this long with no request anywhere")

    @field_validator("query")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("is blank: give PromQL for the requests in front of the model, e.g. "
                             "sum(gateway_pending_requests{model=\"llama\"})")
        return v


class PolicySpec(_Spec):
    model_config = _cel(
        (
            "!has(self.onMissingMetrics) || !has(self.onMissingMetrics.replicas) || !has(self.replicas) || "
            "!has(self.replicas.max) || self.onMissingMetrics.replicas <= self.replicas.max",
            "onMissingMetrics.replicas must be ≤ replicas.max",
        ),
        (
            "!has(self.scaleFromZero) || (has(self.replicas) && has(self.replicas.min) && self.replicas.min == 0)",
            "scaleFromZero needs replicas.min 0",
        ),
        (
            "!has(self.scaleFromZero) || !has(self.scaleFromZero.replicas) || !has(self.replicas) || "
            "!has(self.replicas.max) || self.scaleFromZero.replicas <= self.replicas.max",
            "scaleFromZero.replicas must be ≤ replicas.max",
        ),
    )
    target_ref: TargetRef
    model: ModelSpec
    metrics: MetricsSpec = MetricsSpec()
    slo: SLOSpec = SLOSpec()
    capacity: CapacitySpec = CapacitySpec()
    replicas: ReplicasSpec = ReplicasSpec()
    forecast: ForecastSpec = ForecastSpec()
    cold_start: ColdStartSpec = ColdStartSpec()
    scale_up: ScaleUpSpec = ScaleUpSpec()
    scale_down: ScaleDownSpec = ScaleDownSpec()
    on_missing_metrics: MissingMetricsSpec = MissingMetricsSpec()
    warm_capacity: WarmCapacitySpec = WarmCapacitySpec()
    scale_from_zero: ScaleFromZeroSpec | None = None
    interval_seconds: float = Field(default=15.0, ge=1, le=HOUR, description="control interval")
    dry_run: bool = Field(default=False, description="decide and record, never write to the target")

    @model_validator(mode="after")
    def _fallback_within_bounds(self) -> PolicySpec:
        r = self.on_missing_metrics.replicas
        if r is not None and r > self.replicas.max:
            raise ValueError(f"onMissingMetrics.replicas ({r}) exceeds replicas.max ({self.replicas.max})")
        z = self.scale_from_zero
        if z is not None and self.replicas.min != 0:
            raise ValueError(f"scaleFromZero needs replicas.min 0 (it is {self.replicas.min}, so the model never "
                             "rests at 0): set replicas.min: 0 or remove scaleFromZero")
        if z is not None and z.replicas > self.replicas.max:
            raise ValueError(f"scaleFromZero.replicas ({z.replicas}) exceeds replicas.max ({self.replicas.max})")
        return self


class ObjectMeta(BaseModel):
    """The part of Kubernetes metadata a policy file uses; the API server adds the rest."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = Field(min_length=1, max_length=63)
    namespace: str = Field(default="default", min_length=1, max_length=63)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name", "namespace")
    @classmethod
    def _dns_label(cls, v: str) -> str:
        if not _DNS_LABEL.match(v):
            raise ValueError("must be a DNS label: lowercase letters, digits and '-', e.g. llama-8b")
        return v


class ModelScalingPolicy(_Spec):
    api_version: Literal["autoscaler.inference.dev/v1alpha1"]
    kind: Literal["ModelScalingPolicy"]
    metadata: ObjectMeta
    spec: PolicySpec
    status: dict[str, Any] | None = Field(default=None, description="written by the controller")

    @property
    def key(self) -> str:
        """namespace/name, unique in a cluster."""
        return f"{self.metadata.namespace}/{self.metadata.name}"
