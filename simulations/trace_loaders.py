"""Readers for the trace formats, each producing a `Trace` or a `BinnedWorkload`.

Every bad row is reported as `file:line: field: problem. Fix: ...` (a `SimulationInputError`); an empty
or unsorted file is an error too, never a silently wrong result. Files may be compressed (`.gz`, `.xz`,
`.bz2`, read transparently): the traces shipped in `simulations/data/traces/` are.

- Azure LLM inference trace 2023 (CSV: `TIMESTAMP, ContextTokens, GeneratedTokens`, wall-clock timestamps
  with 100-ns precision, e.g. `2023-11-16 18:17:03.9799600`).
- Mooncake-style JSONL: one object per line with `timestamp` (ms from start), `input_length`,
  `output_length`.
- ServeGen per-client rate windows: a directory of `chunk-*-trace.csv` files, rows
  `window_start_s, rate_rps, iat_cv, iat_dist, param1, param2`, or one file holding all clients, rows
  `client, window_start_s, rate_rps, iat_dist, param1, param2` (the bundled form; see `servegen_workload`).

CSV files are read with pandas (typed, vectorized checks); the arrays handed to the simulator are numpy.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from autoscaler.core.numbers import finite_number
from simulations.errors import SimulationInputError
from simulations.trace import BinnedWorkload, Trace, token_sums

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
SERVEGEN_COLUMNS = ("window_start_s", "rate_rps", "iat_cv", "iat_dist", "param1", "param2")
SERVEGEN_BUNDLED_COLUMNS = ("client", "window_start_s", "rate_rps", "iat_dist", "param1", "param2")
SERVEGEN_WINDOW_SECONDS = 600.0
_OPENERS: dict[str, Callable[..., IO[Any]]] = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_NOT_FOUND_FIX = ("check the path (relative scenario traces resolve against $INFERENCE_AUTOSCALER_TRACES, "
                  "then the bundled simulations/data/traces)")


def logical_suffix(path: Path) -> str:
    """`.csv` for `trace.csv.gz`: the suffix under any compression suffix."""
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in _OPENERS:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _read_error(path: Path, e: Exception) -> SimulationInputError:
    if isinstance(e, FileNotFoundError):
        return SimulationInputError(str(path), "", "file not found", _NOT_FOUND_FIX)
    if isinstance(e, IsADirectoryError):
        return SimulationInputError(str(path), "", "is a directory", "pass a file, or --format servegen")
    if isinstance(e, UnicodeDecodeError):
        return SimulationInputError(str(path), "", "not UTF-8 text", "pass a CSV or JSONL text file")
    if isinstance(e, EOFError | lzma.LZMAError | gzip.BadGzipFile | OSError) and path.suffix in _OPENERS:
        return SimulationInputError(str(path), "", f"cannot decompress ({e})",
                                    f"pass an intact {path.suffix} file or the uncompressed text")
    if isinstance(e, OSError):
        return SimulationInputError(str(path), "", f"cannot read ({e.strerror or e})", "check permissions")
    raise e


def _read_text(path: Path) -> str:
    opener = _OPENERS.get(path.suffix)
    try:
        if opener is None:
            return path.read_text(encoding="utf-8")
        with opener(path, "rt", encoding="utf-8") as fh:
            return str(fh.read())
    except (OSError, UnicodeDecodeError, EOFError, lzma.LZMAError) as e:
        raise _read_error(path, e) from None


def _read_csv(path: Path, header: bool = True) -> pd.DataFrame:
    """Every field as text, blank lines kept (row i is line i + 2 with a header, i + 1 without). A row with
    more fields than the header is an error naming its line: pandas would drop the extra fields of the first
    data rows with only a warning. A NUL character is refused with its line: pandas' parser ends a field at
    one and drops the rest of it unseen."""
    text = _read_text(path)
    nul = text.find("\x00")
    if nul >= 0:
        raise SimulationInputError(f"{path}:{text.count(chr(10), 0, nul) + 1}", "", "a NUL character: not a text CSV",
                                   "remove the NUL bytes (a binary or truncated file)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=False,
                               index_col=False, header=0 if header else None)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except pd.errors.ParserWarning:
        raise _too_wide(path, *_widest_row(path)) from None
    except pd.errors.ParserError as e:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(e))
        if m is None:
            raise SimulationInputError(str(path), "", f"not CSV ({e})", "pass a comma-separated file") from None
        raise _too_wide(path, int(m[2]), int(m[3]), int(m[1])) from None
    except (OSError, UnicodeDecodeError, EOFError, lzma.LZMAError) as e:
        raise _read_error(path, e) from None


def _too_wide(path: Path, line: int, fields: int, expected: int) -> SimulationInputError:
    return SimulationInputError(f"{path}:{line}", "", f"{fields} fields, expected {expected}",
                                "one value per column, as in the header")


def _widest_row(path: Path) -> tuple[int, int, int]:
    """(line, its fields, the header's fields) of the first row with more fields than the header (the line a
    quoted field with newlines ends on)."""
    rows = csv.reader(io.StringIO(_read_text(path)))
    expected = len(next(rows, []))
    for row in rows:
        if len(row) > expected:
            return rows.line_num, len(row), expected
    return 2, expected + 1, expected  # pandas saw one; the csv module did not: point at the first data row


def _blank(df: pd.DataFrame) -> np.ndarray:
    """Rows of a blank or whitespace-only line (cheap: only rows whose later fields are empty get stripped)."""
    blank = np.ones(len(df), dtype=bool)
    for column in df.columns[1:]:
        blank &= df[column].to_numpy() == ""
    rows = np.nonzero(blank)[0]
    if len(rows) and len(df.columns):
        blank[rows] = df.iloc[rows, 0].str.strip().to_numpy() == ""
    return blank


def _numbers(column: pd.Series) -> np.ndarray:
    """Text → float64, each value exactly as Python's `float` parses it (pandas' own fast parser can be off
    by one unit in the last place, which would change seeded workloads); NaN where the text is no number."""
    values = column.to_numpy()
    try:
        return values.astype(np.float64)
    except ValueError:
        return np.array([_float_or_nan(v) for v in values], dtype=np.float64)


def _float_or_nan(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _first(mask: np.ndarray) -> int | None:
    return int(np.argmax(mask)) if mask.any() else None


def _token_counts(df: pd.DataFrame, column: str, lines: np.ndarray, source: Path) -> np.ndarray:
    """Whole numbers ≥ 0 (a zero-token request still occupies a slot: it counts as one token)."""
    raw = df[column]
    x = _numbers(raw)
    not_number = ~np.isfinite(x) & ~np.isinf(x)  # NaN: text that is no number (or an empty field)
    bad = ~np.isfinite(x) | (x < 0) | (x != np.floor(x))
    i = _first(bad)
    if i is not None:
        where = f"{source}:{lines[i]}"
        if not raw.iloc[i].strip():
            raise SimulationInputError(where, column, "missing", "every row needs " + ",".join(AZURE_COLUMNS))
        if not_number[i]:
            raise SimulationInputError(where, column, f"{raw.iloc[i]!r} is not a number", "use a whole number ≥ 1")
        raise SimulationInputError(where, column, f"{raw.iloc[i]!r} is not a whole number ≥ 0", "use a token count")
    return np.maximum(1, x.astype(np.int64))


def _positive_int(where: str, field: str, raw: object) -> int:
    try:
        f = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SimulationInputError(where, field, f"{raw!r} is not a number", "use a whole number ≥ 1") from None
    if not math.isfinite(f) or f < 0 or f != int(f):
        raise SimulationInputError(where, field, f"{raw!r} is not a whole number ≥ 0", "use a token count")
    # A zero-token request still occupies a slot; count it as one token.
    return max(1, int(f))


def _unix_seconds(ns: np.ndarray) -> np.ndarray:
    """Nanoseconds → float seconds as whole seconds + fraction (each part exact, one rounding in the sum), so
    `2023-11-16 18:17:03.9799600` gives the same float as the epoch second plus 0.97996."""
    return (ns // 10**9).astype(np.float64) + (ns % 10**9) / 1e9


def load_azure_csv(path: str | Path) -> Trace:
    p = Path(path)
    df = _read_csv(p)
    if df.empty and len(df.columns) == 0:
        raise SimulationInputError(str(p), "", "the file is empty",
                                   f"an Azure trace needs a header {','.join(AZURE_COLUMNS)} and rows")
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in AZURE_COLUMNS if c not in df.columns]
    if missing:
        raise SimulationInputError(f"{p}:1", missing[0], f"header lacks column(s) {', '.join(missing)}",
                                   f"the header must name {', '.join(AZURE_COLUMNS)} (got {', '.join(df.columns)})")
    lines = np.arange(len(df)) + 2
    keep = ~_blank(df)
    df, lines = df[keep], lines[keep]
    if df.empty:
        raise SimulationInputError(str(p), "", "no request rows after the header", "pass a non-empty trace")
    stamps = pd.to_datetime(df["TIMESTAMP"].str.strip(), format="ISO8601", errors="coerce")
    i = _first(np.asarray(stamps.isna()))
    if i is not None:
        raise SimulationInputError(f"{p}:{lines[i]}", "TIMESTAMP", f"{df['TIMESTAMP'].iloc[i]!r} is not a timestamp",
                                   "use 'YYYY-MM-DD HH:MM:SS.fffffff' (UTC)")
    if stamps.dt.tz is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    t = _unix_seconds(stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64))
    i = _first(np.diff(t) < 0)
    if i is not None:
        raise SimulationInputError(f"{p}:{lines[i + 1]}", "TIMESTAMP",
                                   f"{df['TIMESTAMP'].iloc[i + 1].strip()} is earlier than the row before",
                                   "sort the file by TIMESTAMP")
    prompt = _token_counts(df, "ContextTokens", lines, p)
    out = _token_counts(df, "GeneratedTokens", lines, p)
    start = float(t[0])
    return Trace(_stem(p), t - start, prompt, out, start_epoch=start)


def _stem(path: Path) -> str:
    """`azure_llm_2023_conv` for `azure_llm_2023_conv.csv.gz`."""
    name = path.name
    if path.suffix in _OPENERS:
        name = name[: -len(path.suffix)]
    return Path(name).stem


def load_jsonl(path: str | Path, start_epoch: float = 0.0) -> Trace:
    """Mooncake format: `{"timestamp": ms_from_start, "input_length": n, "output_length": m, ...}`."""
    p = Path(path)
    t_list: list[float] = []
    prompt: list[int] = []
    out: list[int] = []
    hashes: list[tuple[int, ...]] = []
    # Lines end at "\n" only: str.splitlines would also split at U+2028, U+0085 and others, which JSON allows raw
    # inside a string.
    for line_no, line in enumerate(_read_text(p).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{p}:{line_no}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise SimulationInputError(where, "", f"not JSON ({e.msg})", "one JSON object per line") from None
        if not isinstance(obj, dict):
            raise SimulationInputError(where, "", "not a JSON object", "one JSON object per line")
        for key in ("timestamp", "input_length", "output_length"):
            if key not in obj:
                raise SimulationInputError(where, key, "missing", "every line needs timestamp (ms from start), "
                                           "input_length and output_length")
        ts = obj["timestamp"]
        if not finite_number(ts) or ts < 0:
            raise SimulationInputError(where, "timestamp", f"{ts!r} is not a time ≥ 0",
                                       "use milliseconds from the trace start")
        if t_list and ts / 1000.0 < t_list[-1]:
            raise SimulationInputError(where, "timestamp", f"{ts} is earlier than the line before",
                                       "sort the file by timestamp")
        t_list.append(ts / 1000.0)
        prompt.append(_positive_int(where, "input_length", obj["input_length"]))
        out.append(_positive_int(where, "output_length", obj["output_length"]))
        ids = obj.get("hash_ids", [])
        if not isinstance(ids, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in ids):
            raise SimulationInputError(where, "hash_ids", "not a list of integers", "give block hashes as [1, 2]")
        hashes.append(tuple(ids))
    if not t_list:
        raise SimulationInputError(str(p), "", "the file is empty", "one JSON object per request")
    t = np.asarray(t_list)
    return Trace(p.stem, t - t[0], np.asarray(prompt, dtype=np.int64), np.asarray(out, dtype=np.int64),
                 start_epoch=start_epoch + float(t[0]),
                 block_hashes=tuple(hashes) if any(hashes) else None)  # Mooncake hash_ids: prefix caching


def load_servegen_windows(source: str | Path) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """Per-client windows: (window starts [W], [(client, rows [W, 4] = rate, dist code, p1, p2)]).

    `source` is a ServeGen model folder (one `chunk-N-trace.csv` per client) or one file holding every
    client (columns `client, window_start_s, rate_rps, iat_dist, param1, param2`, the bundled form).
    Dist code: 0 no arrivals, 1 Gamma, 2 Weibull. Clients come in the order of their number."""
    d = Path(source)
    if d.is_file():
        return _servegen_bundled(d)
    if not d.is_dir():
        raise SimulationInputError(str(d), "", "not a directory (nor a ServeGen file)",
                                   "pass the folder that holds chunk-*-trace.csv files")
    files = sorted(d.glob("chunk-*-trace.csv*"), key=lambda f: (len(f.name), f.name))
    if not files:
        raise SimulationInputError(str(d), "", "no chunk-*-trace.csv files", "point at a ServeGen model folder")
    starts: np.ndarray | None = None
    clients: list[tuple[str, np.ndarray]] = []
    for f in files:
        df = _read_csv(f, header=False)
        lines = np.arange(len(df)) + 1
        if len(df) and str(df.iloc[0, 0]).strip() == "window_start_s":
            df, lines = df.iloc[1:], lines[1:]
        keep = ~_blank(df)
        df, lines = df[keep], lines[keep]
        if df.empty:
            raise SimulationInputError(str(f), "", "no window rows", "one row per 600-s window")
        if df.shape[1] < len(SERVEGEN_COLUMNS):
            raise SimulationInputError(f"{f}:{lines[0]}", "", f"{df.shape[1]} fields, expected 6",
                                       "rows are " + ",".join(SERVEGEN_COLUMNS))
        df = df.iloc[:, : len(SERVEGEN_COLUMNS)].set_axis(list(SERVEGEN_COLUMNS), axis=1)
        ws, arr = _servegen_rows(df, lines, f)
        if starts is None:
            starts = ws
        elif len(ws) != len(starts) or not np.array_equal(ws, starts):
            raise SimulationInputError(str(f), "window_start_s", "windows differ from the other clients' files",
                                       "all chunk files must cover the same windows")
        clients.append((f.name, arr))
    assert starts is not None
    return starts, clients


def _servegen_bundled(path: Path) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    df = _read_csv(path)
    missing = [c for c in SERVEGEN_BUNDLED_COLUMNS if c not in df.columns]
    if missing:
        raise SimulationInputError(f"{path}:1", missing[0], f"header lacks column(s) {', '.join(missing)}",
                                   "the header must name " + ",".join(SERVEGEN_BUNDLED_COLUMNS))
    lines = np.arange(len(df)) + 2
    keep = ~_blank(df)
    df, lines = df[keep], lines[keep]
    if df.empty:
        raise SimulationInputError(str(path), "", "no window rows", "one row per client and 600-s window")
    client = _numbers(df["client"])
    i = _first(~np.isfinite(client))
    if i is not None:
        raise SimulationInputError(f"{path}:{lines[i]}", "client", f"{df['client'].iloc[i]!r} is not a number",
                                   "number the clients")
    order = np.argsort(client, kind="stable")
    df, lines, client = df.iloc[order], lines[order], client[order]
    ids, first, counts = np.unique(client, return_index=True, return_counts=True)
    short = _first(counts != counts[0])
    if short is not None:
        raise SimulationInputError(str(path), "window_start_s", f"client {ids[short]:g} has {counts[short]} "
                                   f"windows, client {ids[0]:g} {counts[0]}", "give every client the same windows")
    # Within each client the windows must increase: check them per client block, then across clients.
    ws_all, arr = _servegen_rows(df, lines, path, blocks=first)
    ws = ws_all.reshape(len(ids), -1)
    other = _first(np.any(ws != ws[0], axis=1))
    if other is not None:
        raise SimulationInputError(f"{path}:{lines[first[other]]}", "window_start_s",
                                   f"client {ids[other]:g}'s windows differ from client {ids[0]:g}'s",
                                   "give every client the same windows")
    per_client = arr.reshape(len(ids), -1, 4)
    return ws[0].copy(), [(f"client {c:g}", per_client[j]) for j, c in enumerate(ids)]


def _servegen_rows(df: pd.DataFrame, lines: np.ndarray, source: Path,
                   blocks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Window starts [N] and rows [N, 4] = rate, dist code, p1, p2 from text columns; `blocks` are the
    start rows of separate clients (windows must increase within each)."""
    ws = _numbers(df["window_start_s"])
    rate = _numbers(df["rate_rps"])
    i = _first(np.isnan(ws) | np.isnan(rate))
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i]}", "window_start_s/rate_rps", "not a number", "use numbers")
    i = _first(~np.isfinite(rate) | (rate < 0))
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i]}", "rate_rps", f"{df['rate_rps'].iloc[i]!r} is not a rate ≥ 0",
                                   "use requests/s")
    step_ok = np.diff(ws) > 0
    if blocks is not None:
        step_ok[blocks[1:] - 1] = True  # a new client starts over
    i = _first(~step_ok)
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i + 1]}", "window_start_s", "windows are not increasing",
                                   "sort rows by window_start_s")
    active = rate > 0
    dist = df["iat_dist"].to_numpy()
    if np.any(active & (dist != "Gamma") & (dist != "Weibull")):
        dist = df["iat_dist"].str.strip().to_numpy()
    i = _first(active & (dist != "Gamma") & (dist != "Weibull"))
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i]}", "iat_dist", f"{dist[i]!r} is not Gamma or Weibull",
                                   "use Gamma or Weibull for a window with rate > 0")
    p1 = _numbers(df["param1"])
    p2 = _numbers(df["param2"])
    i = _first(active & (np.isnan(p1) | np.isnan(p2)))
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i]}", "param1/param2", "not a number", "use numbers")
    i = _first(active & ~((p1 > 0) & (p2 > 0) & np.isfinite(p1) & np.isfinite(p2)))
    if i is not None:
        raise SimulationInputError(f"{source}:{lines[i]}", "param1/param2",
                                   f"{df['param1'].iloc[i]}, {df['param2'].iloc[i]} must be > 0",
                                   "give the fitted shape and scale")
    arr = np.zeros((len(df), 4))
    arr[active] = np.column_stack([rate, np.where(dist == "Gamma", 1.0, 2.0), p1, p2])[active]
    return ws, arr


def servegen_workload(
    directory: str | Path,
    token_source: Trace,
    rate_factor: float = 1.0,
    bin_seconds: float = 1.0,
    seed: int = 0,
    max_seconds: float | None = None,
    start_epoch: float = 1704067200.0,  # Monday 2024-01-01 00:00 UTC: the files carry no dates
    client: int | None = None,
) -> BinnedWorkload:
    """Arrivals from ServeGen's per-client, per-600-s fits, binned (seeded, deterministic).

    For each client and window: the number of arrivals is `rate_rps × 600 × rate_factor` (stochastic
    rounding); inter-arrival gaps are drawn from the fitted family (Gamma: param1 = shape; Weibull: param1
    = shape) and rescaled so they fill the window: the fit's shape sets the burstiness (CV), the measured
    rate sets the count. Token lengths are not in the rate files: per bin, prompt and output token sums are
    drawn from the `token_source` trace (the Azure conv trace) by `simulations.trace.token_sums`: the
    lengths of real requests in a bin of a few, else the normal approximation of the sum of n lengths.
    """
    starts, clients = load_servegen_windows(directory)
    if client is not None:  # one client's traffic alone (a model only it uses)
        clients = [c for c in clients if c[0] in (f"client {client}", f"chunk-{client}-trace.csv")]
        if not clients:
            raise SimulationInputError(str(directory), "client", f"no client {client} in the file",
                                       "name a client the file holds (its `client` column)")
    horizon = float(starts[-1] + SERVEGEN_WINDOW_SECONDS)
    if max_seconds is not None:
        horizon = min(horizon, max_seconds)
    key = f"{Path(directory).resolve()}|{rate_factor}|{bin_seconds}|{seed}|{horizon}" + (
        f"|client {client}" if client is not None else "")
    cache = _cache_path("servegen", key, [Path(directory)])
    counts: np.ndarray | None = None
    if cache is not None and cache.exists():
        try:
            counts = np.load(cache)["counts"].astype(np.float64)
        except (OSError, ValueError, KeyError):
            counts = None
    if counts is None:
        counts = _servegen_counts(starts, clients, rate_factor, bin_seconds, seed, horizon)
        if cache is not None:
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_suffix(".tmp.npz")
                np.savez_compressed(tmp, counts=counts.astype(np.uint32))
                tmp.replace(cache)
            except OSError:
                pass  # a cache that cannot be written only costs time
    prompt, output = token_sums(counts, token_source, np.random.default_rng(seed + 1),
                                np.random.default_rng([seed, 2]))
    name = _stem(Path(directory)) if Path(directory).is_file() else Path(directory).name
    name += f"-client-{client}" if client is not None else ""
    return BinnedWorkload(name, bin_seconds, counts, prompt, output,
                          np.sort(token_source.prompt_tokens.astype(np.float64)),
                          np.sort(token_source.output_tokens.astype(np.float64)), start_epoch)


def _cache_path(kind: str, key: str, inputs: list[Path]) -> Path | None:
    """Generated workloads are cached (they take ~15 s for 14 days): $INFERENCE_AUTOSCALER_CACHE, else
    ~/.cache/inference-autoscaler; set the variable to an empty string to disable."""
    import hashlib
    import os

    root = os.environ.get("INFERENCE_AUTOSCALER_CACHE")
    if root == "":
        return None
    base = Path(root) if root else Path.home() / ".cache" / "inference-autoscaler"
    stamp = ";".join(f"{f}:{sorted(x.stat().st_mtime_ns for x in [f, *f.glob('*')])[-1:]}" for f in inputs)
    digest = hashlib.sha256(f"v1|{key}|{stamp}".encode()).hexdigest()[:20]
    return base / f"{kind}-{digest}.npz"


def _servegen_counts(
    starts: np.ndarray, clients: list[tuple[str, np.ndarray]], rate_factor: float, bin_seconds: float,
    seed: int, horizon: float,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    nbins = math.ceil(horizon / bin_seconds)
    counts = np.zeros(nbins)
    rates = np.stack([c[:, 0] for _, c in clients], axis=1)  # [W, C]
    codes = np.stack([c[:, 1] for _, c in clients], axis=1)
    shapes = np.stack([c[:, 2] for _, c in clients], axis=1)
    for w, w0 in enumerate(starts):
        if w0 >= horizon:
            break
        expected = rates[w] * SERVEGEN_WINDOW_SECONDS * rate_factor
        n = np.floor(expected).astype(np.int64)
        n += rng.random(len(n)) < (expected - n)
        active = np.nonzero(n > 0)[0]
        if len(active) == 0:
            continue
        m = n[active] + 1  # n arrivals need n + 1 gaps to place them inside the window
        shape_rep = np.repeat(shapes[w, active], m)
        gamma_rep = np.repeat(codes[w, active] == 1, m)
        gaps = np.empty(len(shape_rep))
        gaps[gamma_rep] = rng.standard_gamma(shape_rep[gamma_rep])
        gaps[~gamma_rep] = (-np.log1p(-rng.random(int((~gamma_rep).sum())))) ** (1.0 / shape_rep[~gamma_rep])
        seg_end = np.cumsum(m)
        seg_start = seg_end - m
        seg_id = np.repeat(np.arange(len(m)), m)
        # Tiny Weibull shapes give gaps up to inf: clip, then scale each window by its largest gap.
        gaps = np.clip(np.nan_to_num(gaps, nan=1.0, posinf=1e300), 1e-300, 1e300)
        gaps /= np.maximum.reduceat(gaps, seg_start)[seg_id]
        csum = np.cumsum(gaps)
        base = np.where(seg_start > 0, csum[seg_start - 1], 0.0)
        total = csum[seg_end - 1] - base
        frac = (csum - base[seg_id]) / total[seg_id]
        keep = np.ones(len(frac), dtype=bool)
        keep[seg_end - 1] = False  # the last gap only closes the window
        t = w0 + frac[keep] * SERVEGEN_WINDOW_SECONDS
        t = t[t < horizon]
        counts += np.bincount((t / bin_seconds).astype(np.int64), minlength=nbins)[:nbins]
    return counts


def load_trace(path: str | Path, fmt: str | None = None) -> Trace:
    """A request-level trace by format (azure | jsonl), guessed from the suffix when not given."""
    p = Path(path)
    fmt = fmt or ("jsonl" if logical_suffix(p) in (".jsonl", ".json") else "azure")
    if fmt == "azure":
        return load_azure_csv(p)
    if fmt == "jsonl":
        return load_jsonl(p)
    raise SimulationInputError(str(p), "format", f"{fmt!r} is not a request-level format",
                               "use azure or jsonl (servegen is a directory of rate windows)")
