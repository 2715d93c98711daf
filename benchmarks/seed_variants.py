"""Does a bench verdict survive another draw of the same scenario?

Every scenario carries a seed: it draws the cold-start stages, the clones' jitter, the synthetic arrivals
and the requests sampled into each bin. The bench runs one seed per scenario, so a verdict near the 99%
line can be luck. This script writes copies of the shipped scenarios with other seeds, and puts the bench
runs of each draw side by side:

    python benchmarks/seed_variants.py write DIR [--offsets 100,200]
    inference-autoscaler bench --quick --priors-scales '' --scenarios DIR/*~s1.yaml --json s1.json   # etc.
    python benchmarks/seed_variants.py table shipped.json s1.json s2.json [--readme README.md]
    python benchmarks/seed_variants.py ours DIR [--policy FILE] [--priors-scale 0.7] [--workers 2]   # ours alone

docs/benchmarks.md ("Other seeds") records a run; `--readme` writes its one-paragraph summary between the
README's `<!-- seeds:start -->` and `<!-- seeds:end -->` markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from simulations.scenario import bench_scenario_names, scenario_dir


def write(out: Path, offsets: list[int]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in bench_scenario_names():
        data = yaml.safe_load((scenario_dir() / f"{name}.yaml").read_text(encoding="utf-8"))
        for k, off in enumerate(offsets, 1):
            copy = {**data, "name": f"{name}~s{k}", "seed": int(data.get("seed", 1)) + off}
            path = out / f"{name}~s{k}.yaml"
            path.write_text(yaml.safe_dump(copy, sort_keys=False), encoding="utf-8")
            written.append(path)
    return written


def _rows(file: str) -> dict[str, dict[str, Any]]:
    """A bench --json's headline rows by shipped scenario name (a variant `x~s1` counts as `x`)."""
    rows = json.loads(Path(file).read_text(encoding="utf-8"))["headline"]
    return {Path(r["scenario"]).name.removesuffix(".yaml").split("~")[0]: r for r in rows}


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


def write_readme(readme: Path, text: str) -> None:
    """Replace what stands between the seeds markers; ValueError when the markers are missing."""
    start, end = "<!-- seeds:start -->", "<!-- seeds:end -->"
    doc = readme.read_text(encoding="utf-8")
    i, j = doc.find(start), doc.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{readme}: add the lines {start} and {end} where the summary goes")
    readme.write_text(doc[:i + len(start)] + "\n" + text + "\n" + doc[j:], encoding="utf-8")


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
    shipped scenario and its variants in `out` (written by `write`): one row per scenario, one column per
    draw, attainment and GPU-hours (quick traces). No baseline is searched: a minute or two on 2 cores
    instead of a bench per draw."""
    from simulations.bench import Job, run_jobs

    columns = sorted({p.stem.split("~")[1] for p in out.glob("*~s*.yaml")}, key=lambda k: int(k[1:]))
    names = bench_scenario_names() if names is None else names
    cells = [(n, col) for n in names for col in ["", *columns]]
    for n, col in cells:
        if col and not (out / f"{n}~{col}.yaml").is_file():
            raise FileNotFoundError(f"{out / f'{n}~{col}.yaml'}: run `seed_variants.py write {out}` first")
    jobs = [Job(str(out / f"{n}~{col}.yaml") if col else n, "ours", "default", (), True, policy_file, priors_scale)
            for n, col in cells]
    records = run_jobs(jobs, workers)
    got = {cell: (bool(r["reached"]), r["winner"]) for cell, r in zip(cells, records, strict=True)}
    head = ["shipped seed", *(f"variant {c}" for c in columns)]
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
    t = sub.add_parser("table", help="ours per scenario across bench --json files (one column each)")
    t.add_argument("files", nargs="+")
    t.add_argument("--readme", type=Path, help="also write the summary into this README between the seeds markers")
    o = sub.add_parser("ours", help="ours alone on every shipped scenario and its variants in DIR")
    o.add_argument("dir", type=Path)
    o.add_argument("--policy", default=None, help="policy file (default: the bench's default policy)")
    o.add_argument("--priors-scale", type=float, default=1.0,
                   help="every prior (capacity, cold-start medians) multiplied by this, as in the bench's priors rows")
    o.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    if a.cmd == "ours":
        from simulations.bench import default_policy_file

        if not 0.1 <= a.priors_scale <= 10:  # also rejects nan and inf
            ap.error(f"--priors-scale {a.priors_scale:g}: give a factor between 0.1 and 10, e.g. 0.7")
        try:
            print("\n".join(ours_table(a.dir, a.policy or default_policy_file(), max(1, a.workers),
                                        priors_scale=a.priors_scale)))
        except FileNotFoundError as e:
            print(f"seed_variants: {e}", file=sys.stderr)
            return 2
        return 0
    if a.cmd == "write":
        try:
            offsets = [int(x) for x in a.offsets.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--offsets {a.offsets!r}: write comma-separated whole numbers, e.g. 100,200")
        for p in write(a.dir, offsets):
            print(p)
    else:
        text = summary(a.files)
        print("\n".join(table(a.files)) + "\n\n" + text)
        if a.readme is not None:
            try:
                write_readme(a.readme, text)
            except (OSError, ValueError) as e:
                print(f"seed_variants: {e}", file=sys.stderr)
                return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
