"""Fuzzing the trace loaders (Azure CSV, Mooncake-style JSONL) with mangled files: each either loads a trace
whose every field is physically meaningful, or fails with SimulationInputError naming the file (and, for a
bad row, its line) and the fix. Nothing else escapes."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulations.errors import SimulationInputError
from simulations.trace import Trace
from simulations.trace_loaders import load_azure_csv, load_jsonl

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

odd_text = st.sampled_from(["", " ", "abc", "-1", "0", "1e400", "nan", "inf", "1.5", "99999999999999999999999",
                            "\"", "\"\"", ",", "\x00", "é", "2023-11-16 18:17:03.97", "NaT", "null", "[]"])
timestamp = st.one_of(
    st.builds(lambda s, f: f"2023-11-16 18:{s // 60:02d}:{s % 60:02d}.{f:07d}", st.integers(0, 3599),
              st.integers(0, 9_999_999)),
    odd_text)
count = st.one_of(st.integers(-5, 200_000).map(str), odd_text)
good_ts = st.builds(lambda s: f"2023-11-16 18:{s // 60:02d}:{s % 60:02d}.0", st.integers(0, 3599))
good_count = st.integers(0, 100_000).map(str)
csv_row = st.one_of(st.builds(lambda t, p, o: f"{t},{p},{o}", timestamp, count, count),
                    st.builds(lambda t, p, o, x: f"{t},{p},{o},{x}", good_ts, good_count, good_count, odd_text),
                    st.builds(lambda t, p, o: f"{t},{p},{o}", good_ts, good_count, good_count),
                    st.lists(odd_text, min_size=0, max_size=5).map(",".join))


_TMP = tempfile.TemporaryDirectory()  # removed when the test process ends
_made = itertools.count()


def _file(text: str | bytes, suffix: str) -> Path:
    p = Path(_TMP.name) / f"t{next(_made)}{suffix}"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def _check(tr: Trace) -> None:
    assert len(tr) > 0
    for arr in (tr.arrival_s, tr.prompt_tokens, tr.output_tokens):
        assert np.all(np.isfinite(np.asarray(arr, dtype=float)))
    assert np.all(np.diff(tr.arrival_s) >= 0) and tr.arrival_s[0] >= 0
    assert np.all(np.asarray(tr.prompt_tokens) >= 0) and np.all(np.asarray(tr.output_tokens) >= 0)


def _named(e: SimulationInputError, p: Path) -> None:
    msg = str(e)
    assert str(p) in msg and "Fix:" in msg, msg
    assert "\n" not in msg.strip(), msg  # one line


@FUZZ
@given(header=st.sampled_from([HEADER, HEADER.lower(), "TIMESTAMP,ContextTokens", "a,b,c", ""]),
       rows=st.lists(csv_row, max_size=12), crlf=st.booleans())
def test_a_mangled_azure_csv_loads_clean_or_is_named(header: str, rows: list[str], crlf: bool) -> None:
    text = ("\r\n" if crlf else "\n").join([header, *rows]) + "\n"
    p = _file(text, ".csv")
    try:
        tr = load_azure_csv(p)
    except SimulationInputError as e:
        _named(e, p)
        if re.search(r":\d+:", str(e)):  # a row's error names a line the file has
            line = int(re.search(r":(\d+):", str(e)).group(1))  # type: ignore[union-attr]
            assert 1 <= line <= len(rows) + 1
        return
    _check(tr)
    # nothing lost: one request per row that is not blank, and no row had a field the header does not name
    assert len(tr) == sum(1 for r in rows if r.replace(",", "").strip())
    assert all(_meaningful(fields) <= 3 for fields in csv.reader(io.StringIO(text)))


def _meaningful(fields: list[str]) -> int:
    """Fields up to the last non-empty one (trailing empty fields carry nothing)."""
    n = len(fields)
    while n and not fields[n - 1]:
        n -= 1
    return n


json_value = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
                       st.text(max_size=5), st.lists(st.integers(-3, 3), max_size=3))
json_obj = st.fixed_dictionaries({}, optional={
    "timestamp": json_value, "input_length": json_value, "output_length": json_value, "hash_ids": json_value})
json_line = st.one_of(json_obj.map(lambda d: json.dumps(d)), odd_text, st.just("{"), st.just("[1]"))


@FUZZ
@given(lines=st.lists(json_line, max_size=10), garbage=st.binary(max_size=8))
def test_a_mangled_jsonl_trace_loads_clean_or_is_named(lines: list[str], garbage: bytes) -> None:
    p = _file("\n".join(lines).encode("utf-8") + (garbage if garbage[:1] == b"\xff" else b""), ".jsonl")
    try:
        tr = load_jsonl(p)
    except SimulationInputError as e:
        _named(e, p)
        return
    _check(tr)
    assert len(tr) == sum(1 for line in lines if line.strip())  # one request per line that is not blank


@FUZZ
@given(seconds=st.lists(st.integers(0, 3599), min_size=1, max_size=10), tokens=st.integers(1, 100_000),
       wide=st.data(), extra=st.sampled_from(["99", "", "x", "1,2"]))
def test_a_sorted_trace_with_one_row_widened_is_refused_at_that_row(seconds: list[int], tokens: int,
                                                                    wide: st.DataObject, extra: str) -> None:
    rows = [f"2023-11-16 18:{s // 60:02d}:{s % 60:02d}.0,{tokens},{tokens // 2}" for s in sorted(seconds)]
    k = wide.draw(st.integers(0, len(rows) - 1))
    rows[k] += "," + extra
    p = _file("\n".join([HEADER, *rows]) + "\n", ".csv")
    try:
        load_azure_csv(p)
    except SimulationInputError as e:
        _named(e, p)
        assert f"{p}:{k + 2}:" in str(e)
        return
    # a trailing empty field carries nothing (pandas reads "a,b,c," as three fields); anything else would be lost
    assert extra == "", f"row {k + 2} has a field the header does not name, and the trace loaded"
