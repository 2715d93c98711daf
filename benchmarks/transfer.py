"""Does a baseline's tuning hold on traffic it was not tuned on?

The bench searches every baseline to its cheapest setting on the very replay it is scored on: hindsight no
operator has (the "Other seeds" and "Other days" runs search each baseline again on each draw and day).
Ours is never tuned per replay. An operator tunes once, on the traffic they have, and runs that setting on
the traffic that comes. This script does that: it takes each baseline's setting from one bench run (the
shipped seeds: `bench --quick --json shipped.json`) and replays it unchanged on every variant in the given
directories (other draws and other days, written by `seed_variants.py write`), beside ours as shipped:

    python benchmarks/transfer.py shipped.json seeds days --json transfer.json [--workers 2] [--readme README.md]
    python benchmarks/transfer.py shipped.json --from transfer.json [--readme README.md]   # report it again

It prints one row per variant (GPU-hours and attainment per family; ✗ under 99%), then per scenario how
many variants each family's carried-over setting keeps at 99%, ours' GPU-hours against the shipped seed's
cheapest baseline where both reach 99%, and against the cheapest family whose setting kept every variant
at 99% (over the variants ours keeps). `--readme` writes the summary between the README's
`<!-- transfer:start -->` and `<!-- transfer:end -->` markers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import WORKERS
from benchmarks.replay_set import bench_order, suffix_order
from benchmarks.seed_variants import write_readme
from simulations.bench import BASELINES, TARGET, Job, default_policy_file, run_jobs

FAMILIES = ("ours", *BASELINES)


Setting = tuple[float, tuple[tuple[str, Any], ...]]  # (main-knob value, secondary settings)


def settings(shipped: dict[str, Any]) -> dict[str, dict[str, Setting]]:
    """Per shipped scenario, per baseline: the setting of its cheapest search reaching the target in that
    bench run (the headline's choice); a family that reached nothing there is left out."""
    found: dict[str, dict[str, tuple[float, Setting]]] = {}
    for rec in shipped.get("jobs", []):
        fam, win = rec.get("family"), rec.get("winner") or {}
        if rec.get("kind") != "search" or fam not in BASELINES or not rec.get("reached"):
            continue
        best = found.setdefault(rec["scenario"], {})
        if fam not in best or win["gpu_hours"] < best[fam][0]:
            best[fam] = (win["gpu_hours"], (float(win["value"]), tuple(rec["secondary"].items())))
    return {n: {f: v[1] for f, v in fams.items()} for n, fams in found.items()}


def cheapest(shipped: dict[str, Any]) -> dict[str, str]:
    """Per shipped scenario: the baseline the headline compares ours with (its cheapest tuned baseline)."""
    return {row["scenario"]: row["best_baseline"] for row in shipped.get("headline", []) if row.get("best_baseline")}


def variants(dirs: list[Path], names: set[str]) -> list[tuple[str, Path]]:
    """(shipped scenario, variant file) for every NAME~suffix.yaml in `dirs` whose NAME is a shipped scenario."""
    out = []
    for d in dirs:
        files = sorted(d.glob("*~*.yaml"))
        if not files:
            raise FileNotFoundError(f"{d}: no scenario variants; run `seed_variants.py write {d}` first")
        out += [(name, p) for p in files if (name := p.stem.partition("~")[0]) in names]
    return out


def jobs(cells: list[tuple[str, Path]], chosen: dict[str, dict[str, Setting]], policy_file: str) -> list[Job]:
    out = []
    for name, path in cells:
        out.append(Job(str(path), "ours", "default", (), True, policy_file))
        for fam, (value, secondary) in chosen.get(name, {}).items():
            out.append(Job(str(path), fam, "fixed", secondary, True, policy_file, value=value))
    return out


def _in_order(variants: Iterable[str]) -> list[str]:
    """`NAME~sK` / `NAME~dK` names as the replay set orders them: the bench's scenario order, then draws, then
    days, each numerically (`replay_set.bench_order`, `replay_set.suffix_order`)."""
    parts = {v: v.partition("~") for v in variants}
    rank = {n: i for i, n in enumerate(bench_order({p[0] for p in parts.values()}))}
    return sorted(parts, key=lambda v: (rank[parts[v][0]], suffix_order(parts[v][2])))


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "–"
    w = r["winner"]
    if w["attainment"] >= TARGET:
        return f"{w['gpu_hours']:.2f}"
    return f"✗ {w['attainment'] * 100:.1f}% ({w['gpu_hours']:.2f})"


def table(records: list[dict[str, Any]]) -> list[str]:
    by = {(r["scenario"], r["family"]): r for r in records}
    rows = _in_order({r["scenario"] for r in records})
    lines = ["| variant | " + " | ".join(FAMILIES) + " |", "|---|" + "---|" * len(FAMILIES)]
    lines += [f"| {v} | " + " | ".join(_cell(by.get((v, f))) for f in FAMILIES) + " |" for v in rows]
    return lines


def summary(records: list[dict[str, Any]], best: dict[str, str]) -> tuple[list[str], str]:
    """Per shipped scenario: variants at 99% per family; ours ÷ the shipped seed's cheapest baseline where both
    reach it; and ours against the cheapest family whose carried-over setting kept every variant at 99% (total
    GPU-hours over the variants). Returns the table's lines and the README's paragraph."""
    by = {(r["scenario"], r["family"]): r for r in records}
    groups: dict[str, list[str]] = {}
    for v in _in_order({r["scenario"] for r in records}):
        groups.setdefault(v.split("~", 1)[0], []).append(v)
    head = ["scenario (variants)", *(f"{f} at 99%" for f in FAMILIES), "shipped seed's cheapest baseline",
            "ours ÷ it where both reach 99%: median (range)", "cheapest baseline kept at 99% on every variant",
            "ours ÷ it (total GPU-hours)"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---|" * (len(head) - 1)]
    parts, held_total, ours_total, n_total = [], 0, 0, 0

    def ok(v: str, f: str) -> bool:
        r = by.get((v, f))
        return r is not None and r["winner"]["attainment"] >= TARGET

    def total(vs: list[str], f: str) -> float:
        return sum(by[(v, f)]["winner"]["gpu_hours"] for v in vs)

    for name, vs in groups.items():
        counts = [f"{sum(ok(v, f) for v in vs)}/{len(vs)}" if any((v, f) in by for v in vs) else "–"
                  for f in FAMILIES]
        b = best.get(name)
        ratios = [by[(v, "ours")]["winner"]["gpu_hours"] / by[(v, b)]["winner"]["gpu_hours"]
                  for v in vs if b and ok(v, "ours") and ok(v, b)]
        ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else "–"
        kept = [f for f in BASELINES if all(ok(v, f) for v in vs)]
        robust = min(kept, key=lambda f: total(vs, f)) if kept else None
        mine = [v for v in vs if ok(v, "ours")]
        missed = len(vs) - len(mine)
        versus = "–"
        if robust and mine:
            versus = f"{total(mine, 'ours') / total(mine, robust):.2f}"
            versus += f" (over the {len(mine)} ours keeps; it misses {missed})" if missed else ""
        lines.append(f"| {name} ({len(vs)}) | " + " | ".join(counts) + f" | {b or '–'} | {ratio} | {robust or 'none'}"
                     f" | {versus} |")
        if b:
            held = sum(ok(v, b) for v in vs)
            ours = sum(ok(v, "ours") for v in vs)
            held_total, ours_total, n_total = held_total + held, ours_total + ours, n_total + len(vs)
            part = f"{name}: {b} {held}/{len(vs)}, ours {ours}/{len(vs)}"
            if robust and mine:
                part += f", ours {total(mine, 'ours') / total(mine, robust):.2f}× {robust}"
                part += f" over the {len(mine)} ours keeps" if missed else ""
            elif robust:
                part += f", {robust} kept all"
            parts.append(part)
    text = (f"Tuned once, on the shipped seed, and replayed unchanged on {n_total} other draws and days, the "
            f"baseline each headline row compares with keeps 99% on {held_total} of them; ours, never tuned, on "
            f"{ours_total}. By scenario (that baseline's count, ours', and ours' GPU-hours against the cheapest "
            "baseline whose setting kept every variant at 99%): " + "; ".join(parts) + ". See \"Baselines tuned "
            "once\" in [`docs/benchmarks.md`](docs/benchmarks.md) for the table and the command.")
    return lines, text


def _replay(dirs: list[Path], chosen: dict[str, dict[str, Setting]], policy_file: str,
            workers: int) -> list[dict[str, Any]]:
    cells = variants(dirs, set(chosen))
    if not cells:
        raise FileNotFoundError(f"{', '.join(map(str, dirs))}: no variant of a scenario the bench run searched")
    todo = jobs(cells, chosen, policy_file)
    done = [0]

    def progress(i: int, job: Job, rec: dict[str, Any]) -> None:
        done[0] += 1
        print(f"[{done[0]}/{len(todo)}] {job.title}", file=sys.stderr, flush=True)

    return run_jobs(todo, max(1, workers), on_done=progress)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shipped", type=Path, help="the bench --json whose settings are carried over")
    ap.add_argument("dirs", nargs="*", type=Path, help="directories of scenario variants (seed_variants.py write)")
    ap.add_argument("--json", type=Path, help="write every replay's record here")
    ap.add_argument("--workers", type=WORKERS, default=2)
    ap.add_argument("--policy", default=None, help="ours' policy file (default: the bench's default policy)")
    ap.add_argument("--readme", type=Path, help="also write the summary into this README between the transfer markers")
    ap.add_argument("--from", dest="saved", type=Path, default=None,
                    help="report the records of an earlier --json instead of replaying (DIRS are then not read)")
    a = ap.parse_args(argv)
    if not a.dirs and a.saved is None:
        ap.error("give the directories of scenario variants (seed_variants.py write DIR), or --from an earlier --json")
    try:
        shipped = json.loads(a.shipped.read_text(encoding="utf-8"))
        chosen = settings(shipped)
        if not chosen:
            raise ValueError(f"{a.shipped}: no baseline search reaching {TARGET:.0%}; give a `bench --json` file")
        if a.saved is not None:
            records = json.loads(a.saved.read_text(encoding="utf-8"))["records"]
        else:
            records = _replay(a.dirs, chosen, a.policy or default_policy_file(), a.workers)
        if a.json and a.saved is None:
            a.json.write_text(json.dumps({"shipped": str(a.shipped), "records": records}, indent=1), encoding="utf-8")
        lines, text = summary(records, cheapest(shipped))
        print("\n".join(table(records)) + "\n\n" + "\n".join(lines) + "\n\n" + text)
        if a.readme is not None:
            write_readme(a.readme, text, "transfer")
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"transfer: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
