"""The README's generated claims are current: each was measured beside the headline docs/benchmarks.md shows,
and the headline's cells are what the code replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.seed_variants import write_readme
from simulations.autoscalers.ours import Ours
from simulations.bench import MARK_END, MARK_START, ours_replay
from simulations.provenance import docs_beside, headline_ours, headline_stamp, stamp_in
from simulations.runner import run

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
# The README's paragraphs written by benchmarks/seed_variants.py, transfer.py and replay_set.py.
GENERATED = ("seeds", "days", "transfer", "noise")


def _doc(ours: dict[str, str]) -> str:
    rows = "\n".join(f"| {k} | yes | {v} | 1.00 |" for k, v in ours.items())
    return (f"# Benchmarks\n\n{MARK_START}\n\nSome text.\n\n| scenario | tuned on? | ours (default) | static |\n"
            f"|---|---|---|---|\n{rows}\n\nMore text | with | bars |\n{MARK_END}\n")


def test_the_stamp_is_the_ours_column_and_moves_with_any_cell_of_it() -> None:
    doc = _doc({"diurnal": "344.05", "azure-code": "✗ 88.8%"})
    assert headline_ours(doc) == {"diurnal": "344.05", "azure-code": "✗ 88.8%"}
    stamp = headline_stamp(doc)
    assert stamp is not None and len(stamp) == 12
    assert headline_stamp(_doc({"diurnal": "344.06", "azure-code": "✗ 88.8%"})) != stamp
    assert headline_stamp(_doc({"diurnal": "344.05", "azure-code": "✗ 88.9%"})) != stamp
    assert headline_stamp("# no table here\n") is None


def test_a_written_paragraph_carries_the_stamp_of_its_trees_headline(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- seeds:start -->\nold\n<!-- seeds:end -->\n", encoding="utf-8")
    write_readme(readme, "no headline beside it")
    assert stamp_in(readme.read_text(encoding="utf-8")) is None
    docs_beside(readme).parent.mkdir()
    docs_beside(readme).write_text(_doc({"diurnal": "344.05"}), encoding="utf-8")
    write_readme(readme, "measured now")
    text = readme.read_text(encoding="utf-8")
    assert "measured now" in text and "old" not in text
    assert stamp_in(text) == headline_stamp(_doc({"diurnal": "344.05"}))


@pytest.mark.parametrize("marker", GENERATED)
def test_every_generated_readme_paragraph_was_measured_beside_the_current_headline(marker: str) -> None:
    readme = README.read_text(encoding="utf-8")
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    block = readme[readme.index(start):readme.index(end)]
    current = headline_stamp(docs_beside(README).read_text(encoding="utf-8"))
    assert current is not None, "docs/benchmarks.md has no headline table"
    assert stamp_in(block) == current, (
        f"README's {marker} paragraph was measured beside headline {stamp_in(block)}, and the headline is now "
        f"{current}: rerun its command (docs/benchmarks.md) with --readme README.md")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["azure-conv", "azure-conv-cold", "azure-code", "flash-crowd", "diurnal"])
def test_the_headlines_cells_are_what_the_code_replays(scenario: str) -> None:
    cell = headline_ours(docs_beside(README).read_text(encoding="utf-8"))[scenario]
    sc, wl, policy = ours_replay(scenario, 1.0)
    outcome = run(sc, wl, Ours(policy)).outcome
    replayed = f"{outcome.gpu_hours:.2f}" if outcome.attainment >= 0.99 else f"✗ {100 * outcome.attainment:.1f}%"
    assert replayed == cell, (f"docs/benchmarks.md's headline says ours costs {cell} on {scenario}, and the code "
                              f"replays {replayed}: rerun `inference-autoscaler bench --quick --workers 2 --doc "
                              f"docs/benchmarks.md --readme README.md`")
