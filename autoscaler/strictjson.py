"""Strict JSON: what every JSON the project writes goes through (JSON has no Infinity or NaN).

A non-finite float becomes null; in a mapping its key `K` gets a sibling `K_null_reason` saying why;
numpy scalars and arrays become plain numbers and lists, paths strings.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def dumps_strict(payload: Any, indent: int | None = 2) -> str:
    return json.dumps(strict_json(payload), indent=indent, allow_nan=False)


NULL_REASONS = {
    "inf": "infinite: some requests were never served (or waited past the replay), so no finite value exists",
    "-inf": "minus infinity: no finite value exists",
    "nan": "undefined: there were no samples to compute it from",
}


def _kind(x: float) -> str:
    return "nan" if x != x else ("inf" if x > 0 else "-inf")


def strict_json(x: Any) -> Any:
    """`x` with numpy types made plain and every non-finite float replaced by null; in a mapping, the
    key `K` that became null gets a sibling `K_null_reason` saying why (JSON has no Infinity or NaN)."""
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            v = _plain(v)
            if isinstance(v, float) and not math.isfinite(v):
                out[str(k)] = None
                out[f"{k}_null_reason"] = NULL_REASONS[_kind(v)]
            else:
                out[str(k)] = strict_json(v)
        return out
    if isinstance(x, (list, tuple)):
        return [strict_json(v) for v in x]
    x = _plain(x)
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, (dict, list, tuple)):
        return strict_json(x)
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    raise TypeError(f"not JSON serializable: {type(x).__name__}")


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, Path):
        return str(x)
    return x
