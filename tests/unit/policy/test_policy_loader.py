"""Loading and validating ModelScalingPolicy documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.cli import main
from autoscaler.policy_loader import PolicyError, load_policies_text, load_policy_file

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "policies").glob("*.yaml"))

GOOD = """\
apiVersion: autoscaler.inference.dev/v1alpha1
kind: ModelScalingPolicy
metadata:
  name: m
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: m}
  model: {name: m}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as e:
        load_policies_text(text, "p.yaml")
    return [str(p) for p in e.value.problems]


def test_the_four_examples_are_valid() -> None:
    assert len(EXAMPLES) == 4
    specs = [load_policy_file(p)[0].spec for p in EXAMPLES]
    assert {s.target_ref.kind for s in specs} == {"Deployment", "InferenceService", "LeaderWorkerSet"}
    assert sum(s.scale_from_zero is not None for s in specs) == 1


def test_defaults_fill_a_minimal_policy() -> None:
    (pol,) = load_policies_text(GOOD)
    assert pol.metadata.namespace == "default"
    assert pol.spec.replicas.min == 1
    assert pol.spec.on_missing_metrics.action == "hold"


def test_unknown_field_is_an_error_with_its_path_and_line() -> None:
    (msg,) = problems(GOOD + "  replicas: {min: 1, mx: 3}\n")
    assert msg.startswith("p.yaml:8: spec.replicas.mx: unknown field")


def test_bad_enum_names_the_value_and_what_is_allowed() -> None:
    (msg,) = problems(GOOD.replace("model: {name: m}", "model: {name: m, engine: llamacpp}"))
    assert "spec.model.engine" in msg and "'llamacpp'" in msg and "'vllm'" in msg


def test_min_above_max_is_rejected() -> None:
    (msg,) = problems(GOOD + "  replicas: {min: 5, max: 2}\n")
    assert "min (5) must be ≤ max (2)" in msg


def test_every_problem_is_reported_not_just_the_first() -> None:
    text = GOOD + "  slo: {ttftSeconds: -1}\n  intervalSeconds: zero\n"
    found = problems(text)
    assert len(found) == 2
    assert any("spec.slo.ttftSeconds" in p for p in found)
    assert any("spec.intervalSeconds" in p for p in found)


def test_yaml_syntax_error_names_the_line() -> None:
    (msg,) = problems(GOOD + "  replicas: [1, 2\n")
    assert msg.startswith("p.yaml:9") and "YAML syntax error" in msg


def test_empty_file_is_an_error() -> None:
    (msg,) = problems("# nothing here\n")
    assert "empty" in msg


def test_fixed_fallback_needs_a_replica_count() -> None:
    (msg,) = problems(GOOD + "  onMissingMetrics: {action: fixed}\n")
    assert "needs replicas" in msg


def test_bad_timezone_and_time_are_rejected() -> None:
    window = "{start: '25:00', end: '08:00', minReplicas: 1, timezone: Mars/Base}"
    text = GOOD + f"  replicas:\n    floorSchedule:\n      - {window}\n"
    found = problems(text)
    assert any("start" in p and "HH:MM" in p for p in found)
    assert any("timezone" in p and "IANA" in p for p in found)


def test_multi_document_file_is_all_or_nothing() -> None:
    second = GOOD.replace("name: m\nspec", "name: n\nspec") + "  dryRun: maybe\n"
    found = problems(GOOD + "---\n" + second)
    assert len(found) == 1 and "[doc 1]" in found[0]


def test_cli_validate_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["validate", *map(str, EXAMPLES)])
    assert ok.exit_code == 0, ok.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD + "  replicas: {min: -1}\n")
    res = runner.invoke(main, ["validate", str(bad)])
    assert res.exit_code == 1
    assert "spec.replicas.min" in res.output and "-1" in res.output


def test_cli_validate_missing_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.yaml")])
    assert res.exit_code == 1 and "cannot read file" in res.output


# --- fuzzing: malformed documents are rejected with a message, never a crash -------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                     st.text(max_size=12))
_docs = st.recursive(_scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                   st.dictionaries(st.text(max_size=10), c, max_size=4)),
                     max_leaves=20)
_keys = ["targetRef", "model", "metrics", "slo", "capacity", "replicas", "forecast", "coldStart", "scaleUp",
         "scaleDown", "onMissingMetrics", "intervalSeconds", "dryRun"]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(spec=st.dictionaries(st.sampled_from(_keys), _docs, max_size=6))
def test_fuzz_spec_values_never_crash(spec: dict) -> None:
    doc = {"apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
           "metadata": {"name": "m"}, "spec": spec}
    try:
        load_policies_text(yaml.safe_dump(doc))
    except PolicyError as e:
        assert e.problems and all(str(p) for p in e.problems)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_fuzz_arbitrary_text_never_crashes(text: str) -> None:
    try:
        load_policies_text(text)
    except PolicyError as e:
        assert e.problems


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, len(GOOD)), junk=st.text(max_size=5))
def test_fuzz_truncated_and_corrupted_documents(cut: int, junk: str) -> None:
    try:
        load_policies_text(GOOD[:cut] + junk + GOOD[cut:])
    except PolicyError as e:
        assert e.problems


@pytest.mark.parametrize(("extra", "cycle"), [
    ("  replicas: {min: 0, max: 4}\n", False),
    ("  replicas: {min: 0, max: 4}\n  onMissingMetrics: {action: fixed, replicas: 1}\n", True),
    ("  replicas: {min: 0, max: 4, floorSchedule: [{start: '08:00', end: '18:00', minReplicas: 1}]}\n"
     "  onMissingMetrics: {action: floor}\n", True),
    ("  replicas: {min: 0, max: 4}\n  onMissingMetrics: {action: floor}\n", False),  # no floor above 0: holds at 0
])
def test_validate_notes_a_floor_of_zero_and_still_accepts_it(tmp_path: Path, extra: str, cycle: bool) -> None:
    """At 0 replicas no engine reports demand: validate says what brings the first replica back."""
    f = tmp_path / "zero.yaml"
    f.write_text(GOOD + extra)
    res = CliRunner().invoke(main, ["validate", str(f)])
    assert res.exit_code == 0, res.output
    note = [line for line in res.output.splitlines() if ": note: " in line]
    assert len(note) == 1 and "replicas.min is 0" in note[0] and "floorSchedule window" in note[0]
    assert ("cycles 0 -> 1 -> 0" in note[0]) is cycle
    plain = tmp_path / "one.yaml"
    plain.write_text(GOOD)
    assert ": note: " not in CliRunner().invoke(main, ["validate", str(plain)]).output
