"""The replay set: ours alone on every shipped scenario, its other draws and its other days, saved and compared.

A decision change is judged on more than the bench's eight shipped seeds: docs/benchmarks.md counts, per
scenario group, how many of the 87 replays (8 shipped seeds, 5 other draws of each, 13 later days of each
ServeGen scenario) reach 99%, and what they cost against the version before. These are the commands:

    python benchmarks/replay_set.py write DIR                      # the 79 variants (seed_variants.py write)
    python benchmarks/replay_set.py run DIR --json L.json [--policy FILE] [--priors-scale 0.7] [--workers 2]
    python benchmarks/replay_set.py compare K.json L.json          # per group: at 99% K → L, GPU-h L ÷ K
    python benchmarks/replay_set.py run DIR --json F.json --set forecast.enabled=false   # one field changed
    python benchmarks/replay_set.py table K.json "forecast off=F.json" … [--shipped]   # a row per file
    python benchmarks/replay_set.py noise K.json N1.json N2.json [--readme README.md]   # K's own noise floor

`run` replays ours as shipped (the bench's `ours default` job, quick traces; no baseline is searched) on
the shipped scenarios that have variants in DIR and on every variant, and writes attainment and GPU-hours
per replay. `compare` prints one row per scenario group: how many replays reach 99% in each file, the
median (min–max) ratio of GPU-hours, and the replays that crossed 99% either way. `--set PATH=VALUE`
(repeatable) runs the policy with one field of its spec changed (PATH as the policy YAML spells it); the
policy run is written beside the JSON (`F.policy.yaml`). `table` prints one row per file: per scenario
group, the replays at 99%, the total GPU-hours ÷ the first file's, and the mean attainment (docs/benchmarks.md,
"Tried after T"); with `--shipped`, also each scenario's shipped seed (the bench's own cell). Two runs of
the same code give the same file: a difference is the change's.

A difference is not always a change's *effect*, though. `noise` compares runs of the same code whose priors
differ by a hundredth of a percent (`run --priors-scale 1.0001`, `0.9999`) with the run at 1: no physical
difference at all, so whatever moves there is how far the learner's path turns on nothing. It prints one row
per file: the replays that moved, how many by more than NOISE_SHARE of their GPU-hours, the range of the
GPU-hours ratios, the replays at 99% and the total GPU-hours ratio; `--readme` writes its one-sentence summary
between the README's `noise` markers (docs/benchmarks.md, "The replay set's noise floor").
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import PRIORS_SCALE, WORKERS
from benchmarks.seed_variants import write, write_days, write_readme
from simulations.bench import TARGET
from simulations.scenario import bench_scenario_names

OFFSETS = [100, 200, 300, 400, 500]
NOISE_SHARE = 0.01  # a replay moved "by more than noise" once its GPU-hours moved by more than this share
DAYS = list(range(2, 15))


def cells(out: Path) -> list[tuple[str, str]]:
    """(shipped scenario, variant suffix or "") for the shipped scenarios with variants in `out` and for each
    variant, in the bench's scenario order, draws before days."""
    variants: dict[str, list[str]] = {}
    for p in out.glob("*~*.yaml"):
        name, _, suffix = p.stem.partition("~")
        variants.setdefault(name, []).append(suffix)
    names = [n for n in bench_scenario_names() if n in variants]
    if not names:
        raise FileNotFoundError(f"{out}: no scenario variants (NAME~s1.yaml, NAME~d2.yaml); "
                                f"run `replay_set.py write {out}` first")
    return [(n, s) for n in names for s in ["", *sorted(variants[n], key=suffix_order)]]


def suffix_order(suffix: str) -> tuple[int, int]:
    """Draws (s1, s2, …) before days (d2, d3, …), each in numeric order."""
    return (0 if suffix.startswith("s") else 1, int(suffix[1:]) if suffix[1:].isdigit() else 0)


def run(out: Path, policy_file: str, workers: int = 2, priors_scale: float = 1.0) -> dict[str, Any]:
    """Ours as configured in `policy_file` (priors × `priors_scale`) on every cell of `out`: one record each."""
    from simulations.bench import Job, run_jobs

    todo = cells(out)
    jobs = [Job(str(out / f"{n}~{s}.yaml") if s else n, "ours", "default", (), True, policy_file, priors_scale)
            for n, s in todo]
    done = [0]

    def progress(_i: int, job: Job, _rec: dict[str, Any]) -> None:
        done[0] += 1
        print(f"[{done[0]}/{len(jobs)}] {Path(job.scenario).stem}", file=sys.stderr, flush=True)

    records = run_jobs(jobs, workers, on_done=progress)
    replays = [{"scenario": n, "variant": s, "attainment": r["winner"]["attainment"],
                "gpu_hours": r["winner"]["gpu_hours"]} for (n, s), r in zip(todo, records, strict=True)]
    return {"policy": policy_file, "priors_scale": priors_scale, "replays": replays}


def load(path: str) -> dict[tuple[str, str], tuple[float, float]]:
    """A `run --json` file as {(scenario, variant): (attainment, GPU-hours)}; ValueError naming what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        got = {(str(r["scenario"]), str(r["variant"])): (float(r["attainment"]), float(r["gpu_hours"]))
               for r in data["replays"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a `replay_set.py run --json` file ({e}); write it with that command") from e
    bad = [k for k, (a, g) in got.items() if not (0 <= a <= 1 and math.isfinite(g) and g >= 0)]
    if bad:
        raise ValueError(f"{path}: replay {'~'.join(bad[0])} has an attainment outside [0, 1] or a GPU-hours "
                         "that is not a finite number ≥ 0; write the file again with `replay_set.py run`")
    return got


def bench_order(names: set[str]) -> list[str]:
    """Scenario names in the bench's order; names the bench does not ship come after, by name."""
    order = {n: i for i, n in enumerate(bench_scenario_names())}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


def compare(a: dict[tuple[str, str], tuple[float, float]], b: dict[tuple[str, str], tuple[float, float]],
            names: tuple[str, str] = ("A", "B")) -> list[str]:
    """Per scenario group, over the replays both files hold: at 99% in each, the median (min–max) GPU-hours
    ratio b ÷ a, the replays that crossed 99%, the mean attainment in each and the total GPU-hours ratio;
    then the same over every replay. The last two do not flip with a replay a hundredth of a point either side
    of 99% (the ServeGen days and draws sit there under every variant), so they say which way a change
    moved the whole group."""
    both = [k for k in a if k in b]
    if not both:
        raise ValueError("the two files share no replay: run both over the same DIR")
    groups = bench_order({n for n, _ in both})
    lines = [f"| scenario (replays) | at 99%: {names[0]} → {names[1]} | GPU-h {names[1]} ÷ {names[0]}: median "
             f"(min–max) | crossed 99% | mean attainment {names[0]} → {names[1]} | GPU-h total {names[1]} ÷ "
             f"{names[0]} |", "|---|---|---|---|---|---|"]
    total_a = total_b = 0
    for g in groups:
        keys = [k for k in both if k[0] == g]
        ca = sum(a[k][0] >= TARGET for k in keys)
        cb = sum(b[k][0] >= TARGET for k in keys)
        total_a, total_b = total_a + ca, total_b + cb
        ratios = [b[k][1] / a[k][1] for k in keys if a[k][1] > 0]
        spread = (f"{statistics.median(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})" if ratios else "–")
        crossed = [f"{_label(k)} {_pct(a[k][0])} → {_pct(b[k][0])}" for k in sorted(keys)
                   if (a[k][0] >= TARGET) != (b[k][0] >= TARGET)]
        lines.append(f"| {g} ({len(keys)}) | {ca} → {cb} | {spread} | {'; '.join(crossed) or '–'} | "
                     f"{_means(a, b, keys)} |")
    lines.append(f"| all ({len(both)}) | {total_a} → {total_b} | | | {_means(a, b, both)} |")
    return lines


def table(runs: list[tuple[str, dict[tuple[str, str], tuple[float, float]]]]) -> list[str]:
    """One row per (label, run): per scenario group, over the replays every run holds, 'k/n, GPU-h total ÷ the
    first run's, mean attainment'; first the replays at 99% over all of them. The first run is the reference."""
    keys = [k for k in runs[0][1] if all(k in r for _, r in runs)]
    if not keys:
        raise ValueError("the files share no replay: run them all over the same DIR")
    groups = bench_order({n for n, _ in keys})
    per = {g: [k for k in keys if k[0] == g] for g in groups}
    base = runs[0][1]
    lines = [f"| run | at 99% (of {len(keys)}) | " + " | ".join(groups) + " |", "|---|---|" + "---|" * len(groups)]
    for label, r in runs:
        cells_ = []
        for g in groups:
            ks = per[g]
            gb, gr = sum(base[k][1] for k in ks), sum(r[k][1] for k in ks)
            ratio = f"{gr / gb:.3f}×" if gb > 0 else "–"
            cells_.append(f"{sum(r[k][0] >= TARGET for k in ks)}/{len(ks)}, {ratio}, "
                          f"{statistics.fmean(r[k][0] for k in ks) * 100:.2f}%")
        lines.append(f"| {label} | {sum(r[k][0] >= TARGET for k in keys)} | " + " | ".join(cells_) + " |")
    return lines


def shipped_table(runs: list[tuple[str, dict[tuple[str, str], tuple[float, float]]]]) -> list[str]:
    """One row per (label, run): each scenario's shipped seed (the bench's own cell), 'GPU-h (attainment)'."""
    names = bench_order({n for n, v in runs[0][1] if v == "" and all((n, "") in r for _, r in runs)})
    lines = ["| run | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, r in runs:
        lines.append(f"| {label} | " + " | ".join(f"{r[(n, '')][1]:.2f} ({_pct(r[(n, '')][0])})" for n in names)
                     + " |")
    return lines


def with_settings(policy_file: str, settings: list[str], dest: Path) -> str:
    """`policy_file` with each `PATH=VALUE` of `settings` set in its spec (PATH dotted as the policy YAML spells
    it, e.g. `capacity.sloFeedback.enabled=false`; VALUE read as YAML), written to `dest` and checked as a
    policy; ValueError naming the setting and the fix, and nothing written then."""
    import yaml

    from autoscaler.policy_loader import PolicyError, load_policy_file

    try:
        doc = yaml.safe_load(Path(policy_file).read_text(encoding="utf-8"))
    except yaml.YAMLError as e:  # several documents, or not YAML at all
        raise ValueError(f"{policy_file}: not one YAML policy document ({str(e).splitlines()[0]}); "
                         "give --policy a single policy file") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        raise ValueError(f"{policy_file}: not one policy document with a spec; give --policy a single policy file")
    for setting in settings:
        path, eq, raw = setting.partition("=")
        parts = path.strip().split(".")
        if not eq or not all(parts):
            raise ValueError(f"--set {setting!r}: expected PATH=VALUE, e.g. --set forecast.enabled=false")
        node = doc["spec"]
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--set {setting!r}: spec.{path} goes through a value that is not a mapping; "
                                 "set a field inside a section")
        try:
            node[parts[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            raise ValueError(f"--set {setting!r}: the value is not YAML ({str(e).splitlines()[0]}); "
                             "quote strings, write numbers and true/false plainly") from e
    text = yaml.safe_dump(doc, sort_keys=False)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        load_policy_file(str(tmp))
    except PolicyError as e:
        tmp.unlink()
        first = re.sub(r"^\S*:\d+: ", "", str(e).splitlines()[0])  # the line of a file the user never wrote
        raise ValueError(f"--set {' '.join(settings)}: {first}") from e
    tmp.replace(dest)
    return str(dest)


def noise(base: dict[tuple[str, str], tuple[float, float]],
          runs: list[tuple[str, dict[tuple[str, str], tuple[float, float]]]]) -> tuple[list[str], str]:
    """(table, summary): per (label, run) of the same code as `base` with the priors a hair apart, over the
    replays both hold: how many moved, how many by more than NOISE_SHARE of their GPU-hours, the range of
    the GPU-hours ratios run ÷ base, the replays at 99% in each, the ones that crossed it, the total ratio."""
    lines = [f"| run | replays moved | by > {NOISE_SHARE:.0%} of GPU-h | GPU-h ratio range | at 99% | crossed 99% "
             "| GPU-h total ratio |", "|---|---|---|---|---|---|---|"]
    n_moved, n_big, lo, hi, lost, crossings = [], [], 1.0, 1.0, [], []
    for label, b in runs:
        both = [k for k in base if k in b]
        if not both:
            raise ValueError(f"{label}: shares no replay with the base run; run both over the same DIR")
        keys = [k for k in both if base[k] != b[k]]  # the replays that moved, in the run's own order
        ratios = [b[k][1] / base[k][1] for k in keys if base[k][1] > 0]
        big = [r for r in ratios if abs(r - 1.0) > NOISE_SHARE]
        crossed = [f"{k[0]} {_label(k)} {_pct(base[k][0])} → {_pct(b[k][0])}" for k in keys
                   if (base[k][0] >= TARGET) != (b[k][0] >= TARGET)]
        at_a = sum(base[k][0] >= TARGET for k in both)
        at_b = sum(b[k][0] >= TARGET for k in both)
        total = sum(b[k][1] for k in both) / max(1e-12, sum(base[k][1] for k in both))
        spread = f"{min(ratios):.3f}–{max(ratios):.3f}" if ratios else "–"
        lines.append(f"| {label} | {len(keys)} of {len(both)} | {len(big)} | {spread} | {at_a} → {at_b} | "
                     f"{'; '.join(crossed) or '–'} | {total:.4f} |")
        n_moved.append(len(keys))
        n_big.append(len(big))
        lo, hi = min([lo, *ratios]), max([hi, *ratios])
        lost.append(at_a - at_b)
        crossings += crossed
    runs_said = f"{len(runs)} run{'s' if len(runs) > 1 else ''}"
    summary = (f"The same code with every prior moved by a hundredth of a percent (`replay_set.py noise`, "
               f"{runs_said} against the run at the priors unmoved) moves {_span(n_moved)} of the "
               f"{len(base)} replays, {_span(n_big)} of them by more than {NOISE_SHARE:.0%} of their GPU-hours "
               f"(ratios {lo:.2f}–{hi:.2f}), and changes the count at 99% by up to {max(map(abs, lost))}"
               + (f" ({'; '.join(crossings)})" if crossings else "")
               + ": a difference that size between two versions of the decision is the learner's path, not the "
               "change. See \"The replay set's noise floor\" in [`docs/benchmarks.md`](docs/benchmarks.md).")
    return lines, summary


def _span(xs: list[int]) -> str:
    """'3' or '3–5': the least and the most of `xs`."""
    return f"{min(xs)}" if min(xs) == max(xs) else f"{min(xs)}–{max(xs)}"


def _means(a: dict[tuple[str, str], tuple[float, float]], b: dict[tuple[str, str], tuple[float, float]],
           keys: list[tuple[str, str]]) -> str:
    """'mean attainment a → b | total GPU-hours b ÷ a' over `keys`."""
    ma, mb = (statistics.fmean(x[k][0] for k in keys) for x in (a, b))
    ga, gb = (sum(x[k][1] for k in keys) for x in (a, b))
    return f"{ma * 100:.3f}% → {mb * 100:.3f}% | " + (f"{gb / ga:.3f}" if ga > 0 else "–")


def _pct(x: float) -> str:
    """x as a percentage with two decimals, or four where two would put it on the other side of 99%."""
    two = f"{x * 100:.2f}"
    return f"{two}%" if (float(two) / 100 >= TARGET) == (x >= TARGET) else f"{x * 100:.4f}%"


def _label(key: tuple[str, str]) -> str:
    s = key[1]
    if not s:
        return "shipped seed"
    return f"draw {s[1:]}" if s.startswith("s") else f"day {s[1:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the 5 other draws of every shipped scenario and days 2-14 into DIR")
    w.add_argument("dir", type=Path)
    r = sub.add_parser("run", help="ours alone on the shipped scenarios and every variant in DIR")
    r.add_argument("dir", type=Path)
    r.add_argument("--json", required=True, type=Path, help="write the replays' attainment and GPU-hours here")
    r.add_argument("--policy", default=None, help="policy file (default: the bench's default policy)")
    r.add_argument("--priors-scale", type=PRIORS_SCALE, default=1.0,
                   help="every prior (capacity, cold-start medians) multiplied by this, as in the bench's priors rows")
    r.add_argument("--workers", type=WORKERS, default=2)
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="change one field of the policy's spec, e.g. forecast.enabled=false (repeatable)")
    c = sub.add_parser("compare", help="two `run --json` files side by side, per scenario group")
    c.add_argument("before")
    c.add_argument("after")
    t = sub.add_parser("table", help="one row per `run --json` file against the first, per scenario group")
    t.add_argument("files", nargs="+", metavar="[LABEL=]FILE")
    t.add_argument("--shipped", action="store_true", help="also each scenario's shipped seed, run by run")
    n = sub.add_parser("noise", help="runs of the same code with the priors a hair apart, against the base run")
    n.add_argument("base")
    n.add_argument("files", nargs="+", metavar="[LABEL=]FILE")
    n.add_argument("--readme", type=Path, help="also write the summary into this README between the noise markers")
    a = ap.parse_args(argv)
    if a.cmd == "write":
        for p in [*write(a.dir, OFFSETS), *write_days(a.dir, DAYS)]:
            print(p)
        return 0
    if a.cmd == "run":
        from simulations.bench import default_policy_file

        try:
            policy = a.policy or default_policy_file()
            if a.set:
                policy = with_settings(policy, a.set, a.json.with_suffix(".policy.yaml"))
            result = run(a.dir, policy, a.workers, a.priors_scale)
        except (FileNotFoundError, ValueError) as e:
            print(f"replay_set: {e}", file=sys.stderr)
            return 2
        result["settings"] = a.set
        a.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        reached = sum(x["attainment"] >= TARGET for x in result["replays"])
        print(f"{reached} of {len(result['replays'])} replays reach 99%; written to {a.json}")
        return 0
    try:
        if a.cmd in ("table", "noise"):
            # LABEL may hold "=" (a --set it names): the file is after the last one
            labelled = [f.rpartition("=")[::2] if "=" in f else (Path(f).stem, f) for f in a.files]
            runs = [(label, load(f)) for label, f in labelled]
        if a.cmd == "noise":
            lines, summary = noise(load(a.base), runs)
            print("\n".join(lines) + "\n\n" + summary)
            if a.readme is not None:
                write_readme(a.readme, summary, "noise")
        elif a.cmd == "table":
            print("\n".join(table(runs)))
            if a.shipped:
                print("\n" + "\n".join(shipped_table(runs)))
        else:
            print("\n".join(compare(load(a.before), load(a.after), (Path(a.before).stem, Path(a.after).stem))))
    except ValueError as e:
        print(f"replay_set: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
