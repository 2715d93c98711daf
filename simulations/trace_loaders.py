"""Readers for the trace formats, each producing a `Trace` or a `BinnedWorkload`.

Every bad row is reported as `file:line: field: problem. Fix: ...` (a `SimulationInputError`); an empty
or unsorted file is an error too, never a silently wrong result.

- Azure LLM inference trace 2023 (CSV: `TIMESTAMP, ContextTokens, GeneratedTokens`, wall-clock timestamps
  with 100-ns precision, e.g. `2023-11-16 18:17:03.9799600`).
- Mooncake-style JSONL: one object per line with `timestamp` (ms from start), `input_length`,
  `output_length`.
- ServeGen per-client rate windows: a directory of `chunk-*-trace.csv` files, rows
  `window_start_s, rate_rps, iat_cv, iat_dist, param1, param2` (see `servegen_workload`).
"""

from __future__ import annotations

import csv
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from simulations.errors import SimulationInputError
from simulations.trace import BinnedWorkload, Trace

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
SERVEGEN_WINDOW_SECONDS = 600.0


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SimulationInputError(str(path), "", "file not found",
                                   "check the path (scenario traces resolve against $INFERENCE_AUTOSCALER_TRACES)"
                                   ) from None
    except IsADirectoryError:
        raise SimulationInputError(str(path), "", "is a directory", "pass a file, or --format servegen") from None
    except UnicodeDecodeError:
        raise SimulationInputError(str(path), "", "not UTF-8 text", "pass a CSV or JSONL text file") from None
    except OSError as e:
        raise SimulationInputError(str(path), "", f"cannot read ({e.strerror})", "check permissions") from None


def _positive_int(where: str, field: str, raw: object) -> int:
    try:
        f = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SimulationInputError(where, field, f"{raw!r} is not a number", "use a whole number ≥ 1") from None
    if not math.isfinite(f) or f < 0 or f != int(f):
        raise SimulationInputError(where, field, f"{raw!r} is not a whole number ≥ 0", "use a token count")
    # A zero-token request still occupies a slot; count it as one token.
    return max(1, int(f))


def parse_azure_timestamp(raw: str) -> float:
    """`2023-11-16 18:17:03.9799600` (UTC) → unix seconds; any number of fraction digits."""
    head, _, frac = raw.strip().partition(".")
    dt = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
    if frac and not frac.isdigit():
        raise ValueError("fraction is not digits")
    return dt.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)


def load_azure_csv(path: str | Path) -> Trace:
    p = Path(path)
    rows = list(csv.reader(_read_text(p).splitlines()))
    if not rows:
        raise SimulationInputError(str(p), "", "the file is empty",
                                   f"an Azure trace needs a header {','.join(AZURE_COLUMNS)} and rows")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in AZURE_COLUMNS if c not in header]
    if missing:
        raise SimulationInputError(f"{p}:1", missing[0], f"header lacks column(s) {', '.join(missing)}",
                                   f"the header must name {', '.join(AZURE_COLUMNS)} (got {', '.join(header)})")
    ti, ci, gi = (header.index(c) for c in AZURE_COLUMNS)
    n = len(rows) - 1
    t = np.empty(n)
    prompt = np.empty(n, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    k = 0
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        where = f"{p}:{line_no}"
        if len(row) < len(header):
            raise SimulationInputError(where, "", f"{len(row)} fields, expected {len(header)}",
                                       "every row needs TIMESTAMP,ContextTokens,GeneratedTokens")
        try:
            t[k] = parse_azure_timestamp(row[ti])
        except ValueError:
            raise SimulationInputError(where, "TIMESTAMP", f"{row[ti]!r} is not a timestamp",
                                       "use 'YYYY-MM-DD HH:MM:SS.fffffff' (UTC)") from None
        if k and t[k] < t[k - 1]:
            raise SimulationInputError(where, "TIMESTAMP", f"{row[ti]} is earlier than the row before",
                                       "sort the file by TIMESTAMP")
        prompt[k] = _positive_int(where, "ContextTokens", row[ci])
        out[k] = _positive_int(where, "GeneratedTokens", row[gi])
        k += 1
    if k == 0:
        raise SimulationInputError(str(p), "", "no request rows after the header", "pass a non-empty trace")
    start = float(t[0])
    return Trace(p.stem, t[:k] - start, prompt[:k], out[:k], start_epoch=start)


def load_jsonl(path: str | Path, start_epoch: float = 0.0) -> Trace:
    """Mooncake format: `{"timestamp": ms_from_start, "input_length": n, "output_length": m, ...}`."""
    p = Path(path)
    t_list: list[float] = []
    prompt: list[int] = []
    out: list[int] = []
    hashes: list[tuple[int, ...]] = []
    for line_no, line in enumerate(_read_text(p).splitlines(), start=1):
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
        if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts) or ts < 0:
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


def load_servegen_windows(directory: str | Path) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """Per-client windows: (window starts [W], [(client file, rows [W, 4] = rate, cv, dist, p1, p2)])."""
    d = Path(directory)
    if not d.is_dir():
        raise SimulationInputError(str(d), "", "not a directory",
                                   "pass the folder that holds chunk-*-trace.csv files")
    files = sorted(d.glob("chunk-*-trace.csv"), key=lambda f: (len(f.name), f.name))
    if not files:
        raise SimulationInputError(str(d), "", "no chunk-*-trace.csv files", "point at a ServeGen model folder")
    starts: np.ndarray | None = None
    clients: list[tuple[str, np.ndarray]] = []
    for f in files:
        rows = [r for r in csv.reader(_read_text(f).splitlines()) if r and any(c.strip() for c in r)]
        if rows and rows[0][0].strip() == "window_start_s":
            rows = rows[1:]
        if not rows:
            raise SimulationInputError(str(f), "", "no window rows", "one row per 600-s window")
        ws = np.empty(len(rows))
        arr = np.zeros((len(rows), 4))  # rate, dist code (0 none, 1 gamma, 2 weibull), p1, p2
        for i, row in enumerate(rows):
            where = f"{f}:{i + 1}"
            if len(row) < 6:
                raise SimulationInputError(where, "", f"{len(row)} fields, expected 6",
                                           "rows are window_start_s,rate_rps,iat_cv,iat_dist,param1,param2")
            try:
                ws[i] = float(row[0])
                rate = float(row[1])
            except ValueError:
                raise SimulationInputError(where, "window_start_s/rate_rps", "not a number", "use numbers") from None
            if not math.isfinite(rate) or rate < 0:
                raise SimulationInputError(where, "rate_rps", f"{row[1]!r} is not a rate ≥ 0", "use requests/s")
            if i and ws[i] <= ws[i - 1]:
                raise SimulationInputError(where, "window_start_s", "windows are not increasing",
                                           "sort rows by window_start_s")
            dist = row[3].strip()
            code = 0
            if rate > 0:
                if dist not in ("Gamma", "Weibull"):
                    raise SimulationInputError(where, "iat_dist", f"{dist!r} is not Gamma or Weibull",
                                               "use Gamma or Weibull for a window with rate > 0")
                code = 1 if dist == "Gamma" else 2
                try:
                    p1, p2 = float(row[4]), float(row[5])
                except ValueError:
                    raise SimulationInputError(where, "param1/param2", "not a number", "use numbers") from None
                if not (p1 > 0 and p2 > 0 and math.isfinite(p1) and math.isfinite(p2)):
                    raise SimulationInputError(where, "param1/param2", f"{row[4]}, {row[5]} must be > 0",
                                               "give the fitted shape and scale")
                arr[i] = (rate, code, p1, p2)
        if starts is None:
            starts = ws
        elif len(ws) != len(starts) or not np.array_equal(ws, starts):
            raise SimulationInputError(str(f), "window_start_s", "windows differ from the other clients' files",
                                       "all chunk files must cover the same windows")
        clients.append((f.name, arr))
    assert starts is not None
    return starts, clients


def servegen_workload(
    directory: str | Path,
    token_source: Trace,
    rate_factor: float = 1.0,
    bin_seconds: float = 1.0,
    seed: int = 0,
    max_seconds: float | None = None,
    start_epoch: float = 1704067200.0,  # Monday 2024-01-01 00:00 UTC: the files carry no dates
) -> BinnedWorkload:
    """Arrivals from ServeGen's per-client, per-600-s fits, binned (seeded, deterministic).

    For each client and window: the number of arrivals is `rate_rps × 600 × rate_factor` (stochastic
    rounding); inter-arrival gaps are drawn from the fitted family (Gamma: param1 = shape; Weibull: param1
    = shape) and rescaled so they fill the window: the fit's shape sets the burstiness (CV), the measured
    rate sets the count. Token lengths are not in the rate files: per bin, prompt and output token sums are
    drawn from the `token_source` distribution (the Azure conv trace; normal approximation of the sum of
    n i.i.d. lengths: n·mean + sqrt(n)·sd·z, clipped at 0).
    """
    starts, clients = load_servegen_windows(directory)
    horizon = float(starts[-1] + SERVEGEN_WINDOW_SECONDS)
    if max_seconds is not None:
        horizon = min(horizon, max_seconds)
    key = f"{Path(directory).resolve()}|{rate_factor}|{bin_seconds}|{seed}|{horizon}"
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
    prompt, output = _token_sums(counts, token_source, np.random.default_rng(seed + 1))
    return BinnedWorkload(Path(directory).name, bin_seconds, counts, prompt, output,
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
    stamp = ";".join(f"{f}:{sorted(x.stat().st_mtime_ns for x in f.glob('*'))[-1:]}" for f in inputs)
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


def _token_sums(counts: np.ndarray, source: Trace, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for col in (source.prompt_tokens, source.output_tokens):
        mean, sd = float(np.mean(col)), float(np.std(col))
        z = rng.standard_normal(len(counts))
        out.append(np.maximum(0.0, counts * mean + np.sqrt(counts) * sd * z))
    return out[0], out[1]


def load_trace(path: str | Path, fmt: str | None = None) -> Trace:
    """A request-level trace by format (azure | jsonl), guessed from the suffix when not given."""
    p = Path(path)
    fmt = fmt or ("jsonl" if p.suffix in (".jsonl", ".json") else "azure")
    if fmt == "azure":
        return load_azure_csv(p)
    if fmt == "jsonl":
        return load_jsonl(p)
    raise SimulationInputError(str(p), "format", f"{fmt!r} is not a request-level format",
                               "use azure or jsonl (servegen is a directory of rate windows)")
