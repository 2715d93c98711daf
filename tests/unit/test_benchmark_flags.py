"""Every number flag of the developer scripts under benchmarks/ is bounded on both sides and refuses NaN and
infinities in one line, as the product CLI's flags are (tests/unit/test_cli_flags.py).

Each script builds its parser inside `main`; the walk captures it at `parse_args` instead of running the script.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from autoscaler.cli.params import PRIORS_SCALE, WORKERS, arg_count, arg_number

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if "argparse" in p.read_text())
BAD = ("nan", "inf", "-inf", "1e308", "-1e308", "1e400", "x")


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser(name: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    module = importlib.import_module(f"benchmarks.{name}")

    def capture(self: argparse.ArgumentParser, *_a: Any, **_k: Any) -> Any:
        raise _Captured(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    with pytest.raises(_Captured) as caught:
        module.main()
    return caught.value.parser


def _actions(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _actions(sub, f"{path}{sub_name} ")
        elif action.type is not None:
            yield f"{path}{'/'.join(action.option_strings) or action.dest}", action


def _is_number(action: argparse.Action) -> bool:
    return getattr(action.type, "__qualname__", "").split(".<locals>")[0] in ("arg_number", "arg_count")


def test_every_script_with_a_parser_is_walked() -> None:
    assert {"replay_set", "seed_variants", "transfer", "where_replicas_go", "fuzz_decide"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_bare_number_flag(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bare = [flag for flag, a in _actions(_parser(name, monkeypatch)) if a.type in (int, float)]
    assert not bare, f"benchmarks/{name}.py: {bare} take any int/float (NaN, ±inf, 1e308); use arg_number/arg_count"


@pytest.mark.parametrize("name", SCRIPTS)
def test_number_flags_refuse_non_finite_and_huge(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for flag, action in _actions(_parser(name, monkeypatch)):
        if not _is_number(action):
            continue
        parse = cast(Callable[[str], Any], action.type)
        for text in BAD:
            with pytest.raises(argparse.ArgumentTypeError, match=r"^'.*' is not "):
                parse(text)
        if action.default is not None and not isinstance(action.default, list):
            assert parse(str(action.default)) == action.default, f"{name} {flag}: default out of its bounds"


def test_bounds_are_closed_and_open_as_asked() -> None:
    assert arg_number(0, 1, lo_open=True)("1") == 1.0
    with pytest.raises(argparse.ArgumentTypeError, match=r"\(0, 1\]"):
        arg_number(0, 1, lo_open=True)("0")
    assert arg_number(0, 1)("0") == 0.0
    assert arg_count(2, 3)("2") == 2
    with pytest.raises(argparse.ArgumentTypeError, match=r"not in 2\.\.3"):
        arg_count(2, 3)("4")
    with pytest.raises(argparse.ArgumentTypeError, match="not a whole number"):
        arg_count(2, 3)("2.5")
    assert WORKERS("64") == 64 and PRIORS_SCALE("0.7") == 0.7


@pytest.mark.parametrize(("args", "flag"), [
    (["run", "set", "--json", "x.json", "--workers", "0"], "--workers"),
    (["run", "set", "--json", "x.json", "--priors-scale", "nan"], "--priors-scale"),
])
def test_a_bad_flag_is_one_line_before_any_work(args: list[str], flag: str, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "replay_set.py"), *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("replay_set.py run: error: argument") and flag in last, run.stderr
    assert not (tmp_path / "x.json").exists()
