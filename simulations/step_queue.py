"""Queue time inside a bin: vLLM's step loop as a single-queue gated polling system.

vLLM's scheduler (`Scheduler.schedule`) runs one engine step at a time. A request that arrives during a
step waits in WAITING until that step ends; the next step schedules everything waiting, FCFS, while the
token budget lasts. So below saturation a request's queue time (arrival to first scheduled) is the
residual of the step in flight, and a step lasts its fixed part `s0` (base + the decodes beside it) plus
the prefill of what arrived during the step before it. In queueing terms this is a single queue with
gated service and a switch-over time `s0` per cycle: a cycle (a step) serves exactly the work that
arrived during the previous cycle. With Poisson arrivals at rate `λ` per replica and per-prompt service
`S = cp · min(prompt, budget)` (a prompt longer than the budget is cut into steps of at most the
budget), the cycle length `C` obeys

    C' = s0 + S_1 + … + S_N,    N ~ Poisson(λ · C)

so, with `ρ = λ E[S]` (the share of time spent on prefill):

    E[C]   = s0 / (1 − ρ)
    Var[C] = D · λ E[S²] E[C] / (1 − ρ²)

(Var[C'] = E[N] E[S²] + λ² E[S]² Var[C] from the compound sum, at the fixed point). `D` is the arrivals'
index of dispersion at the step's time scale (1 for Poisson; requests that arrive in clumps of k
multiply the compound sum's variance by E[k²] / E[k]).

An arrival lands in a length-biased cycle and waits for its residual `R`, so
`P(R > x) = E[(C − x)⁺] / E[C]` and `E[R] = E[C²] / (2 E[C])`. For the tail, the prefill part
`Y = C − s0` is taken as 0 or exponential with mean `η` (the two-moment fit: P(Y > 0) · η = E[Y],
η = E[Y²] / (2 E[Y])), which gives `P(R > x) = ρ · exp(−(x − s0) / η)` for x ≥ s0, and keeps E[R] exact.

Checked against a single replica's step loop in tests/unit/simulations/test_step_queue.py (Poisson
arrivals of Azure-conv-like prompts): for ρ ≤ 0.5, E[R] within 12 % and P(R > x) within a factor 2 at
0.1-0.3 s; at ρ = 0.7 it is low (E[R] by a third, P(R > 0.5 s) 6×: what overflows a step's budget waits
another step, which the law leaves out).
It is NOT used by `simulations.fluid` (docs/vllm-replica-model.md, "Fluid and request-level", has the
measurements): applied per replica at each 1-s bin's rate it over-states the fleet's tail 2-4× (the
request-level fleet routes to the replica with the fewest outstanding requests, and a replica stuck in a
long prefill step finishes nothing, so arrivals go elsewhere: the feedback "long step, many arrivals,
long next step" is broken across replicas), and at the mean rate it misses the tail of traces whose
requests come in clumps (Azure conv cloned 10×: 8.9 % over 0.3 s request-level, 3 % predicted).
`python benchmarks/fluid_vs_request.py queue TRACE REPLICAS` prints the comparison.
"""

from __future__ import annotations

import math

RHO_MAX = 0.95  # beyond this the queue is a backlog, not a step residual


class GatedStep:
    """Residual-step law at one load: `tail(x)` = P(queue time > x), `mean` = E[queue time]."""

    __slots__ = ("_cut", "_ec", "cap", "eta", "mean", "rho", "s0", "scale")

    def __init__(self, rate: float, s0: float, mean_s: float, mean_s2: float, full_step: float,
                 dispersion: float = 1.0):
        """rate: arrivals per second at one replica; s0: a step's fixed part (s); mean_s, mean_s2: first
        and second moments of one prompt's prefill time (s, s²); full_step: a step of the whole budget
        (no step is longer); dispersion: the arrivals' index of dispersion."""
        for name, v in (("rate", rate), ("mean_s", mean_s), ("mean_s2", mean_s2), ("dispersion", dispersion)):
            if not v >= 0:
                raise ValueError(f"GatedStep {name}={v}: must be >= 0")
        if not s0 > 0:
            raise ValueError(f"GatedStep s0={s0}: a step's fixed part must be > 0 s")
        rho = rate * mean_s
        rho = rho if rho < RHO_MAX else RHO_MAX
        ec = s0 / (1.0 - rho)
        var = dispersion * rate * mean_s2 * ec / (1.0 - rho * rho)
        ey = ec - s0
        self.rho = rho
        self.s0 = s0
        self.cap = full_step - s0 if full_step > s0 else 0.0
        # the prefill part Y is 0 or exponential(η), P(Y > 0) = q: q·η = E[Y], 2·q·η² = E[Y²] (when the
        # variance is below E[Y]², q would exceed 1: then Y > 0 always, η = E[Y])
        eta = (var + ey * ey) / (2.0 * ey) if ey > 0 else 0.0
        if eta < ey:
            eta = ey
        self.eta = eta
        # cut at the budget: E[(C − x)⁺] / E[C] with C ≤ full_step
        cut = math.exp(-self.cap / eta) if eta > 0 else 0.0
        q = ey / eta if eta > 0 else 0.0
        ec_cut = s0 + q * eta * (1.0 - cut)
        self.scale = q * eta / ec_cut if ec_cut > 0 else 0.0
        # E[R] = E[C²] / (2 E[C]) of the cut law: E[min(Y, M)²] = 2η² q (1 − e^(−M/η)(1 + M/η))
        ey2 = 2.0 * eta * eta * q * (1.0 - cut * (1.0 + self.cap / eta)) if eta > 0 else 0.0
        ec2 = s0 * s0 + 2.0 * s0 * (ec_cut - s0) + ey2
        self.mean = ec2 / (2.0 * ec_cut) if ec_cut > 0 else 0.0
        self._cut = cut
        self._ec = ec_cut

    def tail(self, x: float) -> float:
        if x <= 0:
            return 1.0
        if x < self.s0:  # every step is at least s0 long: E[(C − x)⁺] = E[C] − x
            return 1.0 - x / self._ec
        z = x - self.s0
        if z >= self.cap or self.eta <= 0:
            return 0.0
        return self.scale * (math.exp(-z / self.eta) - self._cut)
