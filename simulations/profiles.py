"""Replica performance, cold-start and cluster profiles: what the simulated fleet is made of.

**Serving profile** (default: Llama-3.1-8B-Instruct, bf16, one H100 SXM, vLLM). Estimates to calibrate,
from docs/benchmark-protocol.md §2:
- prefill ~15,000 tokens/s (compute-bound: ~2·8e9 FLOP per token at ~40% of 989 TFLOP/s dense bf16);
- decode inter-token latency ITL = 7 ms + 0.15 ms × batch (memory-bound: 16 GB of weights read per step
  at ~3.35 TB/s ≈ 5 ms plus overhead; the per-sequence term is KV reads and sampling);
- KV-cache budget ~400,000 tokens: (80 GB − 16 GB weights − activations) at 128 KiB per token
  (32 layers × 8 KV heads × 128 dims × 2 (K, V) × 2 bytes, GQA-8);
- at most 256 running sequences (vLLM `max_num_seqs` default).

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

from pydantic import BaseModel, ConfigDict, Field

ColdStartName = Literal["warm", "typical", "cold"]
COLD_START_NAMES: tuple[str, ...] = ("warm", "typical", "cold")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServingProfile(_Model):
    """Continuous batching on one replica."""

    prefill_tokens_per_second: float = Field(15000.0, gt=0)
    itl_base_seconds: float = Field(0.007, gt=0, description="decode step time at batch 0")
    itl_per_sequence_seconds: float = Field(0.00015, ge=0, description="added per running sequence")
    kv_cache_tokens: int = Field(400_000, gt=0, description="KV-cache budget; caps the batch")
    max_num_seqs: int = Field(256, gt=0, description="vLLM max_num_seqs")
    gpus_per_replica: int = Field(1, ge=1)

    def itl(self, batch: float) -> float:
        return self.itl_base_seconds + self.itl_per_sequence_seconds * batch


class ColdStartProfile(_Model):
    """Median stage durations (seconds) and the cluster they imply."""

    name: str = "custom"
    scheduling_seconds: float = Field(2.0, ge=0)
    node_provisioning_seconds: float = Field(100.0, ge=0)
    image_pull_seconds: float = Field(0.0, ge=0, description="median pull on a node without the image")
    image_preloaded: bool = Field(True, description="new nodes come with the image (node image/secondary disk)")
    weight_load_seconds: float = Field(20.0, ge=0)
    warmup_seconds: float = Field(60.0, ge=0)
    spread: float = Field(0.25, ge=0, le=2, description="lognormal sigma of each stage draw")
    free_gpus: int | None = Field(0, ge=0, description="GPUs free on ready nodes at start; None = unlimited")


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
    gpus_per_node: int = Field(8, ge=1)
    max_gpus: int | None = Field(None, ge=1, description="cluster GPU quota; None = unlimited")
    node_idle_removal_seconds: float = Field(
        600.0, ge=0, description="cluster-autoscaler scale-down-unneeded-time (default 10 min)"
    )
