"""The stages of a decision, each a small pure function returning its value and its part of the explanation.

In the order `decide` runs them:
- readings:    the signals the decision may use (fresh and plausible), and which ones are not;
- demand:      offered work = served work + confirmed backlog growth, and the backlog itself;
- capacity:    work one replica should carry (learned capacity × SLO-feedback load factor);
- predictive:  replicas for the forecast demand one cold start ahead;
- reactive:    replicas for current demand plus the backlog projected to when starting replicas are ready;
- panic:       whether the SLO is already breached (lifts the scale-up limit, holds scale-down);
- bounds:      the binding candidate, capped at replicas.max; stuck replicas; the final floor/max clamp;
- stabilize:   the highest recommendation over the scale-down window;
- rate_limit:  scale-up and scale-down steps per period;
- missing:     what onMissingMetrics asks for when demand is unknown.
Stages import only downward (from autoscaler.core's models and from `sizing`), never from `decide`.
"""
