"""Synthetic demand series for the forecasting tests."""

import numpy as np


def daily_series(days: float, step_seconds: float, noise: float = 5.0, seed: int = 0) -> np.ndarray:
    """Demand around 100 with a +-30 daily sine and Gaussian noise, one value per step."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(days * 86400 / step_seconds)) * step_seconds
    return 100 + 30 * np.sin(2 * np.pi * t / 86400) + rng.normal(0, noise, len(t))
