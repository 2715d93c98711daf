"""Fuzzing scenario files: a shipped scenario with one to three fields set to extreme or wrong values, or its
YAML text damaged, either loads as a scenario or fails with SimulationInputError naming the file, the field
(or the YAML line) and the fix. Nothing else escapes."""

from __future__ import annotations

import copy
import itertools
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulations.errors import SimulationInputError
from simulations.scenario import build_workload, load_scenario, scenario_dir, scenario_names

SHIPPED = {n: yaml.safe_load((scenario_dir() / f"{n}.yaml").read_text(encoding="utf-8")) for n in scenario_names()}
ODD: list[Any] = [None, 0, -1, 1e-9, 1e308, float("inf"), float("nan"), 10**400, True, "", "x" * 10_000, "typical",
                  [], {}, [1, 2], {"a": 1}, "1e3", -0.0]


# Fields the shipped scenarios leave at their defaults, and keys no scenario may have.
EXTRA_PATHS: list[tuple[str, ...]] = [
    ("trace", "no_such_key"), ("no_such_key",), ("bin_seconds",), ("seed",), ("max_replicas",), ("min_replicas",),
    ("slo", "ttft_seconds"), ("slo", "ttft_seconds_per_kilo_prompt_tokens"), ("trace", "clone"),
    ("trace", "rate_factor"), ("trace", "limit_seconds"), ("trace", "prompt_scale"),
    *[("serving", k) for k in ("prefill_tokens_per_second", "itl_base_seconds", "kv_cache_tokens", "block_size",
                              "max_num_batched_tokens", "max_num_seqs", "gpus_per_replica")],
    *[("cold_start", k) for k in ("node_provisioning_seconds", "warmup_seconds", "spread", "free_gpus")],
    *[("cluster", k) for k in ("gpus_per_node", "max_gpus", "warm_slots", "node_idle_removal_seconds")],
]


def _paths(d: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            out.append((*prefix, str(k)))
            out += _paths(v, (*prefix, str(k)))
    return out


def _set(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for k in path[:-1]:
        nxt = d.get(k)
        if not isinstance(nxt, dict):
            d[k] = nxt = {}
        d = nxt
    d[path[-1]] = value


_TMP = tempfile.TemporaryDirectory()  # removed when the test process ends
_made = itertools.count()


def _write(text: str) -> Path:
    p = Path(_TMP.name) / f"s{next(_made)}.yaml"
    p.write_text(text, encoding="utf-8")
    return p


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(name=st.sampled_from(sorted(SHIPPED)), data=st.data())
def test_a_scenario_with_odd_fields_loads_or_names_the_field(name: str, data: st.DataObject) -> None:
    doc = copy.deepcopy(SHIPPED[name])
    paths = [*_paths(doc), *EXTRA_PATHS]
    for _ in range(data.draw(st.integers(1, 3))):
        _set(doc, data.draw(st.sampled_from(paths)), data.draw(st.sampled_from(ODD)))
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except (ValueError, OverflowError):
        return  # not a document YAML can hold (e.g. 10**400 as a float); nothing for the loader to read
    p = _write(text)
    try:
        sc = load_scenario(str(p))
    except SimulationInputError as e:
        msg = str(e)
        assert str(p) in msg and "Fix:" in msg and "\n" not in msg.strip(), msg
        return
    # an accepted scenario builds its workload, or says which field it cannot build from
    try:
        build_workload(sc, 120.0)
    except SimulationInputError as e:
        assert "Fix:" in str(e) and "\n" not in str(e).strip(), str(e)


@FUZZ
@given(name=st.sampled_from(sorted(SHIPPED)), cut=st.floats(0.0, 1.0),
       junk=st.sampled_from(["", ":", "- [", "\t", "&a *a", "!!python/object:os.system", "{", "'", "\x00"]))
def test_a_damaged_scenario_file_is_named_with_its_line(name: str, cut: float, junk: str) -> None:
    text = (scenario_dir() / f"{name}.yaml").read_text(encoding="utf-8")
    i = int(cut * len(text))
    p = _write(text[:i] + junk + text[i:])
    try:
        load_scenario(str(p))
    except SimulationInputError as e:
        msg = str(e)
        assert str(p) in msg and "Fix:" in msg and "\n" not in msg.strip(), msg
