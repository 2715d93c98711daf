"""The Kubernetes controller: informers, leader election, the reconcile tick, status, events, metrics.

No decision logic lives here: each tick gathers signals, calls the pure `autoscaler.core.decide`, and
carries the decision to the target, the policy's status and the event stream.
"""
