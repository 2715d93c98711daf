"""One error type for bad simulator input: it names the place, the field and the fix.

The CLI turns it into a `click.UsageError`; nothing in `simulations/` lets a malformed trace or scenario
surface as a traceback or, worse, as a silently wrong result.
"""

from __future__ import annotations


class SimulationInputError(ValueError):
    """Bad input to the simulator. `where` is e.g. `file.csv:17`, `field` the column or key."""

    def __init__(self, where: str, field: str, problem: str, fix: str):
        self.where, self.field, self.problem, self.fix = where, field, problem, fix
        field_part = f" {field}:" if field else ""
        super().__init__(f"{where}:{field_part} {problem}. Fix: {fix}")

    def __reduce__(self) -> tuple[type, tuple[str, str, str, str]]:
        # Rebuilt from its fields, so it crosses process pools intact (the default passes only the message).
        return type(self), (self.where, self.field, self.problem, self.fix)
