"""The `ModelScalingPolicy` resource: one per model, as a custom resource or a plain YAML file.

Field names are camelCase on the wire (Kubernetes convention) and snake_case in Python.
Unknown fields are errors everywhere: a typo must never be silently ignored.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

API_GROUP = "autoscaler.inference.dev"
API_VERSION = f"{API_GROUP}/v1alpha1"
KIND = "ModelScalingPolicy"
PLURAL = "modelscalingpolicies"
SHORT_NAME = "msp"

Engine = Literal["vllm", "sglang", "tgi", "trtllm"]
ENGINES: tuple[str, ...] = ("vllm", "sglang", "tgi", "trtllm")
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_ALL_DAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

PositiveSeconds = Annotated[float, Field(gt=0)]
NonNegativeSeconds = Annotated[float, Field(ge=0)]
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class _Spec(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class TargetRef(_Spec):
    """What to scale. Deployment, LeaderWorkerSet and any resource with a `/scale` subresource are
    scaled through `/scale`; KServe InferenceService and LLMInferenceService get their own handling."""

    api_version: str = Field(min_length=1, description="e.g. apps/v1, serving.kserve.io/v1beta1")
    kind: str = Field(min_length=1, description="Deployment, InferenceService, LLMInferenceService, ...")
    name: str = Field(min_length=1, max_length=253)

    @field_validator("api_version")
    @classmethod
    def _api_version_shape(cls, v: str) -> str:
        if v.count("/") > 1 or v.endswith("/") or v.startswith("/"):
            raise ValueError("must look like 'group/version' or 'version' (e.g. apps/v1)")
        return v


class PrometheusSource(_Spec):
    url: str | None = Field(
        default=None, description="Prometheus base URL; defaults to the controller's --prometheus-url"
    )


class ScrapeSource(_Spec):
    port: int = Field(default=8000, ge=1, le=65535)
    path: str = Field(default="/metrics", pattern=r"^/")
    scheme: Literal["http", "https"] = "http"
    timeout_seconds: PositiveSeconds = 2.0


class MetricsSpec(_Spec):
    """Where the engine's metrics come from and when they are too old to trust."""

    source: Literal["prometheus", "scrape"] = "prometheus"
    fallback_to_scrape: bool = Field(
        default=True, description="when Prometheus fails, scrape the pods directly until it is back"
    )
    prometheus: PrometheusSource = PrometheusSource()
    scrape: ScrapeSource = ScrapeSource()
    label_selector: dict[str, str] = Field(
        default_factory=dict, description="extra label matchers added to every query"
    )
    staleness_seconds: PositiveSeconds = Field(
        default=60.0, description="a signal older than this is treated as missing"
    )


class ModelSpec(_Spec):
    name: str = Field(min_length=1, description="the engine's model_name label")
    engine: Engine = "vllm"
    gpus_per_replica: int = Field(default=1, ge=1, le=1024)


class SLOSpec(_Spec):
    ttft_seconds: PositiveSeconds | None = 2.0
    queue_time_seconds: PositiveSeconds | None = None
    quantile: float = Field(default=0.99, gt=0, lt=1, description="share of requests that must meet it")

    @model_validator(mode="after")
    def _one_objective(self) -> SLOSpec:
        if self.ttft_seconds is None and self.queue_time_seconds is None:
            raise ValueError("set ttftSeconds and/or queueTimeSeconds")
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
    rate window averages away: plan each replica for less (factor > 1). A comfortable margin means
    the target utilization was cautious: plan for more (factor < 1, never past 95% of capacity)."""

    enabled: bool = True
    min: float = Field(default=0.8, gt=0, le=1, description="lowest factor (most load per replica)")
    max: float = Field(default=3.0, ge=1, le=10, description="highest factor (least load per replica)")
    relax_seconds: PositiveSeconds = Field(
        default=1800.0, description="e-folding time of the factor's fall while the SLO holds with margin")
    min_requests: int = Field(default=20, ge=1, description="judge the SLO only on windows with this many")

    @model_validator(mode="after")
    def _ordered(self) -> SLOFeedbackSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be ≤ max ({self.max})")
        return self


class CapacitySpec(_Spec):
    """Per-replica capacity prior. One replica serves `promptTokensPerSecond` of prefill OR
    `generationTokensPerSecond` of decode at saturation; a mix shares its time."""

    prompt_tokens_per_second: PositiveSeconds = 15000.0
    generation_tokens_per_second: PositiveSeconds = 2500.0
    max_concurrency: int | None = Field(default=None, ge=1, description="sequences one replica runs at once")
    target_utilization: float = Field(default=0.75, gt=0, le=1)
    learn: bool = True
    learn_min_factor: float = Field(default=0.5, gt=0, le=1, description="learned capacity ≥ prior × this")
    learn_max_factor: float = Field(default=2.0, ge=1, description="learned capacity ≤ prior × this")
    slo_feedback: SLOFeedbackSpec = SLOFeedbackSpec()


class FloorWindow(_Spec):
    """A time-of-day floor: at least `minReplicas` between `start` and `end` on `days`."""

    days: list[Weekday] = Field(default_factory=lambda: [*_ALL_DAYS], min_length=1)
    start: str = Field(description="HH:MM, inclusive")
    end: str = Field(description="HH:MM, exclusive; may be earlier than start to cross midnight")
    min_replicas: int = Field(ge=0)
    timezone: str = "UTC"

    @field_validator("start", "end")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        if not _HHMM.match(v):
            raise ValueError("must be HH:MM in 24-hour time, e.g. 08:30")
        return v

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError("must be an IANA time zone such as UTC or Europe/Berlin") from e
        return v


class ReplicasSpec(_Spec):
    min: int = Field(default=1, ge=0)
    max: int = Field(default=10, ge=1)
    floor_schedule: list[FloorWindow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered(self) -> ReplicasSpec:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be ≤ max ({self.max})")
        for i, w in enumerate(self.floor_schedule):
            if w.min_replicas > self.max:
                raise ValueError(f"floorSchedule[{i}].minReplicas ({w.min_replicas}) exceeds max ({self.max})")
        return self


class ForecastSpec(_Spec):
    enabled: bool = True
    method: Literal["auto", "holt", "seasonal", "last", "seasonal-naive"] = "auto"
    quantile: float = Field(default=0.9, ge=0.5, lt=1)
    history_seconds: PositiveSeconds = 14 * 86400.0
    step_seconds: PositiveSeconds = 60.0
    refit_every_seconds: PositiveSeconds = 3600.0


class ColdStartSpec(_Spec):
    """Priors for each cold-start stage (median seconds), learned from what pods and nodes report."""

    scheduling_seconds: NonNegativeSeconds = Field(default=2.0, description="free GPU on a ready node")
    node_provisioning_seconds: NonNegativeSeconds = Field(default=100.0, description="a new GPU node")
    image_pull_seconds: NonNegativeSeconds = Field(default=300.0, description="image not cached on node")
    weight_load_seconds: NonNegativeSeconds = 20.0
    warmup_seconds: NonNegativeSeconds = 60.0
    spread: float = Field(default=0.3, ge=0, le=3, description="lognormal sigma of the prior")
    learn: bool = True
    quantile: float = Field(default=0.9, ge=0.5, lt=1, description="lead-time quantile to plan with")
    unschedulable_limit_seconds: PositiveSeconds = Field(
        default=900.0, description="replicas unschedulable longer than this are reported, not piled on"
    )


class PanicSpec(_Spec):
    """When the SLO is already breached, scale up without the usual rate limit and hold scale-down."""

    enabled: bool = True
    queue_time_ratio: float = Field(default=1.0, gt=0, description="panic when queue time > SLO × this")
    hold_seconds: PositiveSeconds = 120.0
    max_step_percent: float = Field(default=400.0, gt=0)


class ScaleUpSpec(_Spec):
    max_step_replicas: int = Field(default=8, ge=1)
    max_step_percent: float = Field(default=100.0, gt=0)
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
    max_step_replicas: int = Field(default=1, ge=1)
    max_step_percent: float = Field(default=50.0, gt=0, le=100)
    period_seconds: PositiveSeconds = 60.0


class MissingMetricsSpec(_Spec):
    """What stale or absent demand signals lead to. None of them ever scales down."""

    action: Literal["hold", "floor", "fixed"] = "hold"
    replicas: int | None = Field(default=None, ge=0, description="for action=fixed: at least this many")

    @model_validator(mode="after")
    def _fixed_needs_replicas(self) -> MissingMetricsSpec:
        if self.action == "fixed" and self.replicas is None:
            raise ValueError("action 'fixed' needs replicas")
        return self


class PolicySpec(_Spec):
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
    interval_seconds: PositiveSeconds = Field(default=15.0, description="control interval")
    dry_run: bool = Field(default=False, description="decide and record, never write to the target")

    @model_validator(mode="after")
    def _fallback_within_bounds(self) -> PolicySpec:
        r = self.on_missing_metrics.replicas
        if r is not None and r > self.replicas.max:
            raise ValueError(f"onMissingMetrics.replicas ({r}) exceeds replicas.max ({self.replicas.max})")
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
