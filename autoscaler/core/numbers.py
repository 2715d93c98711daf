"""What the project accepts as a number when it reads one back: stored state, a trace's JSON fields."""

from __future__ import annotations

import math
from typing import TypeGuard

# Requests one window judges, or a learned state pools: far above any fleet's traffic, far below an overflow.
MAX_REQUESTS = 1e12


def finite_number(x: object) -> TypeGuard[int | float]:
    """A finite int or float that a float can hold. JSON's true and false are not numbers here, nor are
    strings, and neither is an integer too large for a float."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False
