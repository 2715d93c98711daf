"""Every declared dependency earns its place, and every third-party import is declared.

The rules, checked against pyproject.toml:
- a runtime dependency, or one of a non-dev extra (e.g. `ray`), is imported by the package
  (autoscaler/, forecasting/, simulations/);
- a dev dependency is used by the tests or the tools, which means one of:
  imported by the tests (tests/); a tool tests/run-all.sh runs as `python3 -m NAME` (ruff, mypy, pytest);
  a pytest plugin whose marker or setting the tests or the pytest config use (PYTEST_PLUGIN_USES);
  a stub package `types-X` for a module X the package imports (read by mypy);
  a command-line tool the tests run (its name appears in a test as a string);
- conversely, every module outside the standard library that the package imports comes from a runtime
  dependency or a non-dev extra, and every one the tests import from a declared dependency.
Distribution names map to import names by IMPORT_NAMES, else by lower-casing and '-' → '_'.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with the standard library's tomllib (3.11+)")
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("autoscaler", "forecasting", "simulations")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
IMPORT_NAMES = {"pyyaml": "yaml", "types-pyyaml": "yaml-stubs"}
# pytest plugin → text whose presence in the tests or in pyproject's [tool.pytest.ini_options] uses it
PYTEST_PLUGIN_USES = {"pytest-timeout": ("pytest.mark.timeout(", "timeout =")}


def dist(requirement: str) -> str:
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert m, requirement
    return m.group().lower().replace("_", "-")


def import_name(distribution: str) -> str:
    return IMPORT_NAMES.get(distribution, distribution.replace("-", "_"))


RUNTIME = [dist(r) for r in PROJECT["dependencies"]]
EXTRAS = {name: [dist(r) for r in reqs] for name, reqs in PROJECT["optional-dependencies"].items()}
DEV = EXTRAS.pop("dev")
OPTIONAL = [d for reqs in EXTRAS.values() for d in reqs]


@cache
def imports(*folders: str) -> set[str]:
    """Top-level names of every absolute import in the .py files under `folders`."""
    out: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    out.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    out.add(node.module.split(".")[0])
    return out


def third_party(names: set[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n not in (*PACKAGES, "tests", "benchmarks")}


def test_the_distribution_to_import_mapping_matches_installed_metadata() -> None:
    provides: dict[str, list[str]] = {}
    for top, dists in packages_distributions().items():
        for d in dists:
            provides.setdefault(d.lower().replace("_", "-"), []).append(top)
    checked = 0
    for d in RUNTIME + DEV + OPTIONAL:
        providers = provides.get(d)
        if providers is not None:
            assert import_name(d) in providers, f"{d} installs {providers}, not {import_name(d)}: fix IMPORT_NAMES"
            checked += 1
    assert checked >= len(RUNTIME)  # the runtime dependencies are installed wherever the tests run


@pytest.mark.parametrize("distribution", RUNTIME + OPTIONAL)
def test_each_runtime_or_optional_dependency_is_imported_by_the_package(distribution: str) -> None:
    assert import_name(distribution) in imports(*PACKAGES), (
        f"{distribution} is declared in pyproject.toml but no module of {', '.join(PACKAGES)} imports it: "
        "use it or drop it")


@cache
def _tests_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))


def _dev_use(distribution: str) -> str | None:
    """How the tests or tools use a dev dependency, or None."""
    name = import_name(distribution)
    pytest_config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    if name in imports("tests"):
        return "imported by the tests"
    if re.search(rf"python3? -m {re.escape(name)}\b", (ROOT / "tests" / "run-all.sh").read_text()):
        return "run by tests/run-all.sh"
    uses = PYTEST_PLUGIN_USES.get(distribution, ())
    config_text = "\n".join(f"{k} = {v}" for k, v in pytest_config.items())
    if any(u in _tests_text() or u in config_text for u in uses):
        return "a pytest plugin the tests use"
    if distribution.startswith("types-") and import_name(distribution.removeprefix("types-")) in imports(*PACKAGES):
        return "type stubs for mypy"
    if f'"{distribution}"' in _tests_text():
        return "a command the tests run"
    return None


@pytest.mark.parametrize("distribution", DEV)
def test_each_dev_dependency_is_used_by_the_tests_or_tools(distribution: str) -> None:
    assert _dev_use(distribution), (
        f"{distribution} is a dev dependency in pyproject.toml that no test imports, no tool in "
        "tests/run-all.sh runs and no test or pytest setting uses: use it or drop it")


def test_every_third_party_import_is_declared() -> None:
    declared = {import_name(d) for d in RUNTIME + OPTIONAL}
    assert third_party(imports(*PACKAGES)) - declared == set(), "imported by the package but not declared"
    declared |= {import_name(d) for d in DEV}
    assert third_party(imports("tests")) - declared == set(), "imported by the tests but not declared"
