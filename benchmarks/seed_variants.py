"""Does a bench verdict survive another draw of the same scenario?

Every scenario carries a seed: it draws the cold-start stages, the clones' jitter, the synthetic arrivals
and the requests sampled into each bin. The bench runs one seed per scenario, so a verdict near the 99%
line can be luck. This script writes copies of the shipped scenarios with other seeds, and puts the bench
runs of each draw side by side:

    python benchmarks/seed_variants.py write DIR [--offsets 100,200]
    inference-autoscaler bench --quick --priors-scales '' --scenarios DIR/*~s1.yaml --json s1.json   # etc.
    python benchmarks/seed_variants.py table shipped.json s1.json s2.json

docs/benchmarks.md ("Other seeds") records a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from simulations.autoscalers.registry import BASELINES
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


def _cell(row: dict[str, Any]) -> str:
    fams = row["families"]
    ours, oracle = fams["ours"], fams.get("oracle") or {}
    if not ours.get("reached"):
        return f"✗ {ours['attainment'] * 100:.1f}%"
    reached = {k: v for k, v in fams.items() if k in BASELINES and v.get("reached")}
    cell = f"{ours['gpu_hours']:.2f}"
    if reached:
        name, best = min(reached.items(), key=lambda kv: kv[1]["gpu_hours"])
        cell += f" ({ours['gpu_hours'] / best['gpu_hours']:.2f}× {name}"
        cell += f", {ours['gpu_hours'] / oracle['gpu_hours']:.2f}× oracle)" if oracle.get("gpu_hours") else ")"
    return cell


def table(files: list[str]) -> list[str]:
    """One row per scenario, one column per bench JSON: ours' GPU-hours and ratios, or its attainment."""
    cols: list[dict[str, str]] = []
    for f in files:
        rows = json.loads(Path(f).read_text(encoding="utf-8"))["headline"]
        cols.append({Path(r["scenario"]).name.removesuffix(".yaml").split("~")[0]: _cell(r) for r in rows})
    names = list(dict.fromkeys(n for c in cols for n in c))
    lines = ["| scenario | " + " | ".join(Path(f).stem for f in files) + " |",
             "|---|" + "---|" * len(files)]
    lines += [f"| {n} | " + " | ".join(c.get(n, "–") for c in cols) + " |" for n in names]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the seed variants of every shipped scenario into DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--offsets", default="100,200", help="added to each scenario's seed, one variant each")
    t = sub.add_parser("table", help="ours per scenario across bench --json files (one column each)")
    t.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "write":
        try:
            offsets = [int(x) for x in a.offsets.split(",") if x.strip()]
        except ValueError:
            ap.error(f"--offsets {a.offsets!r}: write comma-separated whole numbers, e.g. 100,200")
        for p in write(a.dir, offsets):
            print(p)
    else:
        print("\n".join(table(a.files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
