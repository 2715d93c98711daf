"""Replica performance, cold-start and cluster profiles: what the simulated fleet is made of.

**Serving profile** (default: Llama-3.1-8B-Instruct, bf16, one H100 SXM 80 GB, vLLM V1 with the OpenAI
server's defaults). The engine follows vLLM's scheduler step by step (`simulations.engine_step`); one step
lasts `itl_base_seconds + prefill tokens / prefill_tokens_per_second + decode tokens ·
(1 / prefill_tokens_per_second + itl_per_sequence_seconds) + context tokens read by the decodes ·
kv_read_seconds_per_token + prefill (query, key) pairs · attention_seconds_per_token_pair`. Where each
number comes from: docs/vllm-replica-model.md.

**Cold-start profiles** (docs/cold-start.md, "Simulation profiles", and the figures cited there): median seconds per
stage; each draw is lognormal around the median with sigma `spread` (default 0.25).

| profile | scheduling / node | image pull | weight load | warmup | free GPUs at start |
|---|---|---|---|---|---|
| warm | 2 s (free GPU) | 0 (cached) | 10 s | 35 s | unlimited |
| typical | 100 s (new node) | 0 (cached on node image) | 20 s | 60 s | 0 |
| cold | 100 s (new node) | 300 s | 60 s | 90 s | 0 |
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autoscaler.policy import DAY

ColdStartName = Literal["warm", "typical", "cold"]
COLD_START_NAMES: tuple[str, ...] = ("warm", "typical", "cold")


class _Model(BaseModel):
    # No infinities or NaN: every field is a physical quantity with bounds (a bad value is named when it is read).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ServingProfile(_Model):
    """One replica: vLLM's scheduler limits, the KV cache and the step-time model."""

    prefill_tokens_per_second: float = Field(15000.0, gt=0, le=1e15, description="compute rate of scheduled tokens")
    itl_base_seconds: float = Field(0.007, gt=0, le=10, description="step time with no tokens (weights read, launch)")
    itl_per_sequence_seconds: float = Field(0.0, ge=0, description="extra per decoding sequence per step")
    kv_read_seconds_per_token: float = Field(4.0e-8, ge=0, le=1e-3, description="per context token a decode attends")
    attention_seconds_per_token_pair: float = Field(
        1.0e-12, ge=0, le=1e-6, description="prefill attention per (query, key) token pair")
    kv_cache_tokens: int = Field(400_000, gt=0, le=10**10,
                                 description="KV-cache capacity (num_gpu_blocks × block_size)")
    block_size: int = Field(16, ge=1, le=4096, description="vLLM KV-cache block size in tokens")
    max_num_batched_tokens: int = Field(8192, ge=1, le=10**7, description="vLLM per-step token budget")
    max_num_seqs: int = Field(1024, gt=0, le=10**6, description="vLLM max_num_seqs (running requests)")
    gpus_per_replica: int = Field(1, ge=1, le=4096)

    @model_validator(mode="after")
    def _limits(self) -> ServingProfile:
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be ≥ max_num_seqs "
                             f"({self.max_num_seqs}), as vLLM's SchedulerConfig requires")
        return self

    def decode_token_seconds(self, context_tokens: float = 1024.0) -> float:
        """Marginal step time of one more decoding sequence with `context_tokens` in its KV cache."""
        return (1.0 / self.prefill_tokens_per_second + self.itl_per_sequence_seconds
                + context_tokens * self.kv_read_seconds_per_token)

    def itl(self, batch: float, context_tokens: float = 1024.0) -> float:
        """Decode-only step time with `batch` sequences of `context_tokens` each."""
        return self.itl_base_seconds + batch * self.decode_token_seconds(context_tokens)


class ColdStartProfile(_Model):
    """Median stage durations (seconds) and the cluster they imply."""

    name: str = "custom"
    scheduling_seconds: float = Field(2.0, ge=0, le=DAY)
    node_provisioning_seconds: float = Field(100.0, ge=0, le=DAY)
    image_pull_seconds: float = Field(0.0, ge=0, le=DAY, description="median pull on a node without the image")
    image_preloaded: bool = Field(True, description="new nodes come with the image (node image/secondary disk)")
    weight_load_seconds: float = Field(20.0, ge=0, le=DAY)
    warmup_seconds: float = Field(60.0, ge=0, le=DAY)
    spread: float = Field(0.25, ge=0, le=2, description="lognormal sigma of each stage draw")
    free_gpus: int | None = Field(0, ge=0, le=10**7, description="GPUs free on ready nodes at start; None = unlimited")


COLD_START_PROFILES: dict[str, ColdStartProfile] = {
    "warm": ColdStartProfile(name="warm", scheduling_seconds=2, node_provisioning_seconds=100,
                             image_pull_seconds=0, weight_load_seconds=10, warmup_seconds=35, free_gpus=None),
    "typical": ColdStartProfile(name="typical", scheduling_seconds=2, node_provisioning_seconds=100,
                                image_pull_seconds=0, weight_load_seconds=20, warmup_seconds=60, free_gpus=0),
    "cold": ColdStartProfile(name="cold", scheduling_seconds=2, node_provisioning_seconds=100,
                             image_pull_seconds=300, image_preloaded=False, weight_load_seconds=60,
                             warmup_seconds=90, free_gpus=0),
}


class ClusterSpec(_Model):
    gpus_per_node: int = Field(8, ge=1, le=4096)
    max_gpus: int | None = Field(None, ge=1, le=10**7, description="cluster GPU quota; None = unlimited")
    node_idle_removal_seconds: float = Field(
        600.0, ge=0, le=7 * DAY, description="cluster-autoscaler scale-down-unneeded-time (default 10 min)"
    )
    # Warm capacity (simulations/lifecycle.py; docs/warm-capacity-sim.md): a fixed pool any policy family can use.
    warm_slots: int = Field(0, ge=0, le=10**5, description="placeholder pods kept warm (each holds one replica's GPUs)")
    warm_weight_load_seconds: float | None = Field(
        None, ge=0, le=DAY, description="median weight load on a warm slot whose weights are pre-staged on the node's "
        "disk (the download is skipped); None: weights not pre-staged, the replica loads them as usual")
