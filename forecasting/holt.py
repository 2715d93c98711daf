"""Holt's linear (optionally damped) exponential smoothing, fitted by minimising one-step SSE.

In error-correction form, with one-step prediction p_t = l_{t-1} + phi*b_{t-1} and error e_t = y_t - p_t:
    l_t = p_t + alpha*e_t
    b_t = phi*b_{t-1} + alpha*beta*e_t
For fixed parameters the state x_t = (l_t, b_t) follows a 2-dimensional linear system driven by y,
x_t = D x_{t-1} + g y_t, so every filtered sequence is a second-order IIR filter of y. We run it with
`scipy.signal.lfilter` instead of a Python loop: an SSE evaluation over 20,160 points costs ~0.2 ms, which
keeps a full `scipy.optimize.minimize` refit well inside the control-loop budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.signal import lfilter

ALPHA_BOUNDS = (0.001, 0.999)
BETA_BOUNDS = (0.001, 0.999)
PHI_BOUNDS = (0.8, 1.0)


class HoltParams(NamedTuple):
    alpha: float
    beta: float
    phi: float


def _system(p: HoltParams) -> tuple[np.ndarray, np.ndarray]:
    a, b, phi = p
    d = np.array([[1.0 - a, phi * (1.0 - a)], [-a * b, phi * (1.0 - a * b)]])
    g = np.array([a, a * b])
    return d, g


def _response(d: np.ndarray, g: np.ndarray, c: np.ndarray, u: np.ndarray, x_init: np.ndarray) -> np.ndarray:
    """c·x_t for t = 0..n-1, where x_t = d x_{t-1} + g u_t and x_{-1} = x_init."""
    n = len(u)
    if n < 3:  # too short for the filter's initial-condition trick; just iterate
        out, x = np.empty(n), x_init.astype(float)
        for t in range(n):
            x = d @ x + g * u[t]
            out[t] = c @ x
        return out
    tr = d[0, 0] + d[1, 1]
    det = d[0, 0] * d[1, 1] - d[0, 1] * d[1, 0]
    adj = np.array([[-d[1, 1], d[0, 1]], [d[1, 0], -d[0, 0]]])
    b0, b1 = float(c @ g), float(c @ adj @ g)
    dx = d @ x_init
    z0, z1 = float(c @ dx), float(c @ (d @ dx))
    v = b0 * u
    v[1:] += b1 * u[:-1]
    v[0] += z0  # zero-input response of the initial state, injected as an input transient
    v[1] += z1 - tr * z0
    result: np.ndarray = lfilter([1.0], [1.0, -tr, det], v)
    return result


def _initial_state(y: np.ndarray) -> np.ndarray:
    k = min(len(y) - 1, 10)
    trend0 = (y[k] - y[0]) / k if k > 0 else 0.0
    return np.array([y[0] - trend0, trend0])  # so the first one-step prediction is ~y[0]


def one_step_predictions(y: np.ndarray, p: HoltParams, x_init: np.ndarray) -> np.ndarray:
    """pred[t] = prediction of y[t] made after y[t-1] (pred[0] from the initial state)."""
    d, g = _system(p)
    w = np.array([1.0, p.phi])
    after = _response(d, g, w, y, x_init)
    return np.concatenate(([x_init[0] + p.phi * x_init[1]], after[:-1]))


def filtered_states(y: np.ndarray, p: HoltParams, x_init: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(level_t, trend_t) after each observation."""
    d, g = _system(p)
    levels = _response(d, g, np.array([1.0, 0.0]), y, x_init)
    trends = _response(d, g, np.array([0.0, 1.0]), y, x_init)
    return levels, trends


def trend_multipliers(phi: float, h_steps: np.ndarray | int) -> np.ndarray:
    """sum_{i=1..h} phi^i: how much of the current trend a forecast h steps ahead adds."""
    h = np.asarray(h_steps, dtype=float)
    if phi >= 1.0 - 1e-12:
        return h
    result: np.ndarray = phi * (1.0 - phi**h) / (1.0 - phi)
    return result


@dataclass(frozen=True, slots=True, eq=False)
class HoltModel:
    """Fitted Holt model over a series; `forecast(h)` continues from its end."""

    params: HoltParams
    levels: np.ndarray
    trends: np.ndarray
    series: np.ndarray
    sigma: float  # standard deviation of one-step errors
    step_seconds: float = 60.0
    method: str = "holt"

    @property
    def level(self) -> float:
        return float(self.levels[-1])

    @property
    def trend(self) -> float:
        return float(self.trends[-1])

    def forecast(self, h_steps: int) -> np.ndarray:
        """Point forecasts for the next `h_steps` buckets."""
        return self.level + self.trend * trend_multipliers(self.params.phi, np.arange(1, h_steps + 1))

    def insample_errors(self, h_steps: int) -> np.ndarray:
        """actual - forecast for every h-step-ahead forecast from an origin inside the series.

        Element i is the error at target index i + h_steps."""
        if len(self.series) <= h_steps:
            return np.empty(0)
        f = self.levels[:-h_steps] + self.trends[:-h_steps] * trend_multipliers(self.params.phi, h_steps)
        result: np.ndarray = self.series[h_steps:] - f
        return result


def _normalised_sse(theta: np.ndarray, y: np.ndarray, x_init: np.ndarray, scale: float) -> float:
    p = HoltParams(float(theta[0]), float(theta[1]), float(theta[2]))
    e = y - one_step_predictions(y, p, x_init)
    sse = float(np.einsum("i,i->", e, e)) / scale  # not `e @ e`: BLAS threading stalls under load
    return sse if np.isfinite(sse) else 1e300


FIT_WINDOW_STEPS = 4096


def fit_holt(
    y: np.ndarray,
    *,
    damped: bool = True,
    step_seconds: float = 60.0,
    start: HoltParams | None = None,
    fit_window_steps: int = FIT_WINDOW_STEPS,
) -> HoltModel:
    """Fit alpha, beta (and phi if `damped`) by bounded L-BFGS-B on the one-step SSE.

    Parameters are estimated on the newest `fit_window_steps` points (recent dynamics matter most and it
    bounds the refit cost); the returned states are then filtered through the whole series. `start`
    (e.g. the previous fit's parameters) warm-starts the optimiser.
    """
    y = np.asarray(y, dtype=float)
    if len(y) == 0:
        raise ValueError("fit_holt needs at least one observation")
    x_init = _initial_state(y)
    if len(y) < 4:
        params = HoltParams(0.5, 0.1, 1.0)
    else:
        recent = y[-fit_window_steps:]
        recent_init = _initial_state(recent)
        scale = len(recent) * max(float(np.var(np.diff(recent))), 1e-12)
        phi_bounds: tuple[float, float] = PHI_BOUNDS if damped else (1.0, 1.0)
        x0 = np.array(start if start is not None else (0.3, 0.05, 0.98))
        x0 = np.clip(
            x0, [ALPHA_BOUNDS[0], BETA_BOUNDS[0], phi_bounds[0]], [ALPHA_BOUNDS[1], BETA_BOUNDS[1], 1.0]
        )
        if not damped:
            x0[2] = 1.0
        res = minimize(
            _normalised_sse,
            x0,
            args=(recent, recent_init, scale),
            method="L-BFGS-B",
            bounds=[ALPHA_BOUNDS, BETA_BOUNDS, phi_bounds],
            options={"maxiter": 100, "ftol": 1e-7},
        )
        params = HoltParams(float(res.x[0]), float(res.x[1]), float(res.x[2]))
    levels, trends = filtered_states(y, params, x_init)
    errors = y - one_step_predictions(y, params, x_init)
    warm = errors[min(len(errors) - 1, 10) :]
    sigma = float(np.std(warm)) if len(warm) > 1 else float(np.std(y))
    return HoltModel(params, levels, trends, y, sigma, step_seconds)
