"""Does a bench verdict survive another draw of the same scenario?

Every scenario carries a seed: it draws the cold-start stages, the clones' jitter, the synthetic arrivals
and the requests sampled into each bin. The bench runs one seed per scenario, so a verdict near the 99%
line can be luck. This script writes copies of the shipped scenarios with other seeds, and puts the bench
runs of each draw side by side:

    python benchmarks/seed_variants.py write DIR [--offsets 100,200]
    python benchmarks/seed_variants.py write DIR --days 2,3,7   # other days of the multi-day traces
    inference-autoscaler bench --quick --priors-scales '' --scenarios DIR/*~s1.yaml --json s1.json   # etc.
    python benchmarks/seed_variants.py table shipped.json s1.json s2.json [--readme README.md]
    python benchmarks/seed_variants.py ours DIR [--policy FILE] [--priors-scale 0.7] [--workers 2]   # ours alone
    python benchmarks/seed_variants.py days days.json [--readme README.md]   # one bench --json over DIR/*~d*.yaml

`--days` writes, instead, later days of the scenarios whose recorded trace spans more than a quick run's
day (ServeGen's 14 days): the same scenario and seed from `trace.start_seconds` = (N - 1) days, named `~dN`.
The bench was never tuned on them: a hold-out set of real traffic.

docs/benchmarks.md ("Other seeds", "Other days") records a run; `--readme` writes its one-paragraph summary
between the README's `<!-- seeds:start -->` and `<!-- seeds:end -->` markers (`days`: the `days` markers).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from autoscaler.cli.params import PRIORS_SCALE, WORKERS
from autoscaler.policy import DAY
from simulations.provenance import stamp_line
from simulations.scenario import (
    Scenario,
    bench_scenario_names,
    build_workload,
    load_scenario,
    parse_scenario,
    scenario_dir,
)


def write(out: Path, offsets: list[int]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in bench_scenario_names():
        data = yaml.safe_load((scenario_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
        for k, off in enumerate(offsets, 1):
            copy = {**data, "name": f"{name}~s{k}", "seed": int(data.get("seed", 1)) + off}
            written.append(_dump(out / f"{name}~s{k}.yaml", copy))
    return written


def multi_day(name: str) -> bool:
    """Whether the scenario replays a recorded trace longer than its quick run's day."""
    sc = load_scenario(name)
    return sc.trace.format == "servegen" and (sc.quick_limit_seconds or 0) <= DAY


START_SECONDS = 600.0  # the start of a day whose load sets its fleet at t = 0


def start_need(scenario: Scenario) -> int:
    """Replicas the first START_SECONDS of the scenario's trace need (the oracle's requirement, no headroom)."""
    from simulations.autoscalers.oracle import plan_need

    need = plan_need(scenario, build_workload(scenario, START_SECONDS), 1.0)
    return max(1, int(need.max()))


def write_days(out: Path, days: list[int]) -> list[Path]:
    """Day N (2, 3, …) of every multi-day scenario: its trace from (N - 1) days on, seed unchanged. Each day
    starts with the shipped scenario's initial replicas scaled by what the day's first ten minutes need
    against what the shipped day's first ten minutes need, so every family starts each day as far from its
    load as on the shipped day (a fleet sized for one midnight is no start for a busier one)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in filter(multi_day, bench_scenario_names()):
        data = yaml.safe_load((scenario_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
        shipped = load_scenario(name)
        base = start_need(shipped)
        for n in days:
            copy = {**data, "name": f"{name}~d{n}", "trace": {**data["trace"], "start_seconds": (n - 1) * DAY}}
            need = start_need(parse_scenario(copy))
            top = shipped.max_replicas
            copy["initial_replicas"] = max(1, min(top, round(shipped.initial_replicas * need / base)))
            written.append(_dump(out / f"{name}~d{n}.yaml", copy))
    return written


def _dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _suffix_key(suffix: str) -> tuple[str, int]:
    """`s2` -> ("s", 2): draws and days in numeric order."""
    return suffix[:1], int(suffix[1:]) if suffix[1:].isdigit() else 0


def _headline(file: str) -> list[tuple[str, str, dict[str, Any]]]:
    """A bench --json's headline rows as (shipped scenario name, variant suffix or "", row): `x~d3` -> x, d3."""
    data = json.loads(Path(file).read_text(encoding="utf-8"))
    rows = data.get("headline") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError(f"{file}: no headline rows; pass the file a `bench --json` wrote")
    out = []
    for r in rows:
        name, _, suffix = Path(r["scenario"]).name.removesuffix(".yaml").partition("~")
        out.append((name, suffix, r))
    return out


def _rows(file: str) -> dict[str, dict[str, Any]]:
    """A bench --json's headline rows by shipped scenario name (a variant `x~s1` counts as `x`)."""
    return {name: r for name, _, r in _headline(file)}


def _cell(row: dict[str, Any]) -> str:
    """Ours' GPU-hours with the bench's own ratios to the cheapest baseline and the oracle, or its attainment."""
    ours = row["families"]["ours"]
    if not ours.get("reached"):
        return f"✗ {ours['attainment'] * 100:.1f}%"
    cell = f"{ours['gpu_hours']:.2f}"
    if row.get("ours_over_best_baseline") is not None:
        cell += f" ({row['ours_over_best_baseline']:.2f}× {row['best_baseline']}"
        oracle = row.get("ours_over_oracle")
        cell += f", {oracle:.2f}× oracle)" if oracle is not None else ")"
    return cell


def _draws(files: list[str]) -> dict[str, list[tuple[bool, float, float | None]]]:
    """Per scenario, per bench JSON: (reached, ours' attainment, ours / the cheapest reached baseline)."""
    out: dict[str, list[tuple[bool, float, float | None]]] = {}
    for f in files:
        for name, row in _rows(f).items():
            ours = row["families"]["ours"]
            out.setdefault(name, []).append((bool(ours.get("reached")), float(ours["attainment"]),
                                             row.get("ours_over_best_baseline")))
    return out


def summary(files: list[str]) -> str:
    """The table in one paragraph (what the README says about the other draws)."""
    draws = _draws(files)
    always = [n for n, d in draws.items() if all(r for r, _, _ in d)]
    ratios = [x for n in always for _, _, x in draws[n] if x is not None]
    never = [n for n, d in draws.items() if not any(r for r, _, _ in d)]
    some = [n for n in draws if n not in always and n not in never]
    parts = []
    if always:
        span = f" at {min(ratios):.2f}–{max(ratios):.2f}× the draw's cheapest tuned baseline" if ratios else ""
        parts.append(f"reaches 99% on every draw of {', '.join(always)}{span}")
    for n in some:
        missed = [a for r, a, _ in draws[n] if not r]
        parts.append(f"misses it on {len(missed)} of {len(draws[n])} draws of {n} "
                     f"({', '.join(f'{a * 100:.1f}%' for a in missed)})")
    if never:
        parts.append(f"misses it on every draw of {', '.join(never)}")
    count = max((len(d) for d in draws.values()), default=0)
    return (f"These verdicts are for one seed per scenario. Run on {count} draws of every scenario (the shipped "
            f"seed and {count - 1} others; each baseline searched again on each), ours " + "; ".join(parts)
            + ": see \"Other seeds\" in [`docs/benchmarks.md`](docs/benchmarks.md) for the table and the command.")


def day_rows(file: str) -> dict[str, dict[int, dict[str, Any]]]:
    """A bench --json over day variants: its headline rows by shipped scenario and day (`x~d3` -> x, 3)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for name, suffix, r in _headline(file):
        if suffix.startswith("d") and suffix[1:].isdigit():
            out.setdefault(name, {})[int(suffix[1:])] = r
    if not out:
        raise ValueError(f"{file}: no day variants (scenarios named NAME~dN) in its headline")
    order = {n: i for i, n in enumerate(bench_scenario_names())}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


def days_table(file: str) -> list[str]:
    """One row per scenario, one column per day: ours' GPU-hours and ratios, or its attainment."""
    rows = day_rows(file)
    days = sorted({d for by_day in rows.values() for d in by_day})
    lines = ["| scenario | " + " | ".join(f"day {d}" for d in days) + " |", "|---|" + "---|" * len(days)]
    lines += [f"| {n} | " + " | ".join(_cell(by_day[d]) if d in by_day else "–" for d in days) + " |"
              for n, by_day in rows.items()]
    return lines


def days_summary(file: str) -> str:
    """The day table in one paragraph (what the README says about the days the policy was not tuned on)."""
    import statistics

    rows = day_rows(file)
    parts, total = [], 0
    for name, by_day in rows.items():
        total += len(by_day)
        reached = [r for r in by_day.values() if r["families"]["ours"].get("reached")]
        ratios = [float(r["ours_over_best_baseline"]) for r in reached if r.get("ours_over_best_baseline") is not None]
        part = f"{name}: 99% on {len(reached)} of {len(by_day)} days"
        if ratios:
            wins = sum(1 for x in ratios if x <= 0.85)
            losses = sum(1 for x in ratios if x > 1.0)
            part += (f", median {statistics.median(ratios):.2f}× the day's cheapest tuned baseline "
                     f"(≤ 0.85× on {wins}, above 1× on {losses})")
        parts.append(part)
    return (f"On {total} days the default policy was never tuned on (days 2–14 of the ServeGen traces, each "
            f"baseline searched again on each day), ours by scenario: " + "; ".join(parts)
            + ": see \"Other days\" in [`docs/benchmarks.md`](docs/benchmarks.md) for the table and the command.")


def write_readme(readme: Path, text: str, marker: str = "seeds") -> None:
    """Replace what stands between the `marker` markers, with the stamp of the headline in the tree's
    docs/benchmarks.md (simulations/provenance.py); ValueError when the markers are missing."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    doc = readme.read_text(encoding="utf-8")
    i, j = doc.find(start), doc.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{readme}: add the lines {start} and {end} where the summary goes")
    stamp = stamp_line(readme)
    body = text if stamp is None else f"{text}\n{stamp}"
    readme.write_text(doc[:i + len(start)] + "\n" + body + "\n" + doc[j:], encoding="utf-8")


def table(files: list[str]) -> list[str]:
    """One row per scenario, one column per bench JSON: ours' GPU-hours and ratios, or its attainment."""
    cols = [{name: _cell(row) for name, row in _rows(f).items()} for f in files]
    names = list(dict.fromkeys(n for c in cols for n in c))
    lines = ["| scenario | " + " | ".join(Path(f).stem for f in files) + " |",
             "|---|" + "---|" * len(files)]
    lines += [f"| {n} | " + " | ".join(c.get(n, "–") for c in cols) + " |" for n in names]
    return lines


def ours_table(out: Path, policy_file: str, workers: int = 2, names: list[str] | None = None,
               priors_scale: float = 1.0) -> list[str]:
    """Ours as configured in `policy_file` (every prior × `priors_scale`, as the bench's priors rows) on every
    shipped scenario with variants in `out` (written by `write` or `write_days`) and on those variants: one
    row per scenario, one column per draw or day, attainment and GPU-hours (quick traces). No baseline is
    searched: a minute or two on 2 cores instead of a bench per draw."""
    from simulations.bench import Job, run_jobs

    variants = [p.stem.split("~", 1) for p in out.glob("*~*.yaml")]
    columns = sorted({v[1] for v in variants}, key=_suffix_key)
    if names is None:
        present = {v[0] for v in variants}
        names = [n for n in bench_scenario_names() if n in present]
    cells = [(n, col) for n in names for col in ["", *columns]]
    for n, col in cells:
        if col and not (out / f"{n}~{col}.yaml").is_file():
            raise FileNotFoundError(f"{out / f'{n}~{col}.yaml'}: run `seed_variants.py write {out}` first")
    jobs = [Job(str(out / f"{n}~{col}.yaml") if col else n, "ours", "default", (), True, policy_file, priors_scale)
            for n, col in cells]
    records = run_jobs(jobs, workers)
    got = {cell: (bool(r["reached"]), r["winner"]) for cell, r in zip(cells, records, strict=True)}
    head = ["shipped seed", *(f"variant {c}" if c.startswith("s") else f"day {c[1:]}" for c in columns)]
    lines = ["| scenario | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for n in names:
        row = []
        for col in ["", *columns]:
            reached, w = got[(n, col)]
            mark = "" if reached else "✗ "
            row.append(f"{mark}{w['attainment'] * 100:.2f}% {w['gpu_hours']:.2f}")
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the seed variants of every shipped scenario into DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--offsets", default="100,200", help="added to each scenario's seed, one variant each")
    w.add_argument("--days", default=None,
                   help="instead: these days (2..14) of the multi-day scenarios, one variant each, e.g. 2,3,7")
    t = sub.add_parser("table", help="ours per scenario across bench --json files (one column each)")
    t.add_argument("files", nargs="+")
    t.add_argument("--readme", type=Path, help="also write the summary into this README between the seeds markers")
    dd = sub.add_parser("days", help="ours per scenario and day from one bench --json over day variants")
    dd.add_argument("file")
    dd.add_argument("--readme", type=Path, help="also write the summary into this README between the days markers")
    o = sub.add_parser("ours", help="ours alone on every shipped scenario and its variants in DIR")
    o.add_argument("dir", type=Path)
    o.add_argument("--policy", default=None, help="policy file (default: the bench's default policy)")
    o.add_argument("--priors-scale", type=PRIORS_SCALE, default=1.0,
                   help="every prior (capacity, cold-start medians) multiplied by this, as in the bench's priors rows")
    o.add_argument("--workers", type=WORKERS, default=2)
    a = ap.parse_args(argv)
    if a.cmd == "ours":
        from simulations.bench import default_policy_file

        try:
            print("\n".join(ours_table(a.dir, a.policy or default_policy_file(), a.workers,
                                        priors_scale=a.priors_scale)))
        except FileNotFoundError as e:
            print(f"seed_variants: {e}", file=sys.stderr)
            return 2
        return 0
    if a.cmd == "days":
        return _report(lambda: (days_table(a.file), days_summary(a.file)), a.readme, "days")
    if a.cmd == "table":
        return _report(lambda: (table(a.files), summary(a.files)), a.readme, "seeds")
    if a.cmd == "write":
        if a.days is not None:
            try:
                days = [int(x) for x in a.days.split(",") if x.strip()]
            except ValueError:
                days = []
            if not days or not all(2 <= d <= 14 for d in days):
                ap.error(f"--days {a.days!r}: write comma-separated days from 2 to 14, e.g. 2,3,7")
            for p in write_days(a.dir, days):
                print(p)
            return 0
        try:
            offsets = [int(x) for x in a.offsets.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--offsets {a.offsets!r}: write comma-separated whole numbers, e.g. 100,200")
        for p in write(a.dir, offsets):
            print(p)
    return 0


def _report(build: Callable[[], tuple[list[str], str]], readme: Path | None, marker: str) -> int:
    """Print a table and its summary, and write the summary into `readme` between the `marker` markers; a
    missing or foreign file is one line and exit 2."""
    try:
        lines, text = build()
        print("\n".join(lines) + "\n\n" + text)
        if readme is not None:
            write_readme(readme, text, marker)
    except (OSError, ValueError, KeyError) as e:
        print(f"seed_variants: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
