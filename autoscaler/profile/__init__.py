"""`inference-autoscaler profile`: one replica's capacity at the SLO, measured on a live endpoint.

sse (stream parsing) -> client (one timed request) -> ramp (Poisson stages, stop at the SLO's break)
-> knee (the highest rate that holds) -> capacity_block (the policy's `capacity` YAML).
mix and prompts say what is sent. Only `client` and `ramp` do I/O; the rest are pure.
"""
