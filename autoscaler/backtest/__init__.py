"""Backtest: the decision core replayed over a model's Prometheus history (virtual clock = range steps).

`fetch_history` pulls the same PromQL the live source uses with `query_range`; `replay` runs
`autoscaler.core.decide` over it and estimates SLO attainment and GPU-hours for its plan and for the
replicas that actually ran; `report` writes the table, JSON and PNG.
"""

from autoscaler.backtest.history import History, fetch_history
from autoscaler.backtest.replay import BacktestResult, replay

__all__ = ["BacktestResult", "History", "fetch_history", "replay"]
