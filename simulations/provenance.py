"""Which headline a generated claim was measured beside.

The README's generated paragraphs (other seeds, other days, baselines tuned once, the noise floor) are each
measured by a command of their own on the decision code of the day they were run. When the decision
changes, the headline table in docs/benchmarks.md is rerun (`bench --doc`), and every paragraph measured
before that is stale until its own command is rerun. So each paragraph carries the stamp of the headline it
was measured beside: a hash of the table's "ours (default)" column, which moves with nearly any change to the
decision or the simulator. `tests/unit/simulations/test_provenance.py` fails while a paragraph's stamp is not
the current headline's, and while a headline cell differs from a replay of the code.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from simulations.bench import MARK_END, MARK_START

OURS_COLUMN = "ours (default)"
_STAMP = re.compile(r"<!-- measured beside the headline ([0-9a-f]{12}) -->")


def headline_ours(doc: str) -> dict[str, str]:
    """Scenario → the headline table's "ours (default)" cell, from docs/benchmarks.md's text; {} when the
    table is not there."""
    i, j = doc.find(MARK_START), doc.find(MARK_END)
    if i < 0 or j < i:
        return {}
    column: int | None = None
    cells: dict[str, str] = {}
    for line in doc[i:j].splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if column is None:
            if OURS_COLUMN in parts:
                column = parts.index(OURS_COLUMN)
            continue
        if len(parts) <= column or not parts[0] or set(parts[0]) <= {"-"}:
            if cells:
                break  # the table ended
            continue
        cells[parts[0]] = parts[column]
    return cells


def headline_stamp(doc: str) -> str | None:
    """12 hex digits of the headline's "ours (default)" column (None: no headline table in `doc`)."""
    cells = headline_ours(doc)
    if not cells:
        return None
    text = "\n".join(f"{k}={v}" for k, v in sorted(cells.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def docs_beside(readme: Path) -> Path:
    """docs/benchmarks.md of the tree `readme` stands in."""
    return readme.parent / "docs" / "benchmarks.md"


def stamp_line(readme: Path) -> str | None:
    """The line a paragraph written into `readme` carries (None: the tree has no headline to stamp with)."""
    doc = docs_beside(readme)
    stamp = headline_stamp(doc.read_text(encoding="utf-8")) if doc.is_file() else None
    return None if stamp is None else f"<!-- measured beside the headline {stamp} -->"


def stamp_in(text: str) -> str | None:
    """The stamp a written paragraph carries, None: none."""
    m = _STAMP.search(text)
    return m.group(1) if m else None
