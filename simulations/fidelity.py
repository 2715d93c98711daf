"""Which fleet model (fluid or request-level) a policy family runs on, per scenario.

Stub: every family runs the scenario's own fidelity. It is replaced by the rule that sends a family
request-level where fluid and request-level attainment disagree for it (protocol §2).
"""

from __future__ import annotations


def fleet_mode(scenario_mode: str, family: str) -> str:
    """`"fluid"` or `"request"` for `family` on a scenario whose fidelity is `scenario_mode`."""
    del family
    return scenario_mode
